"""Byte transports (serial via pyserial URLs, USB bulk via pyusb) and the reconnecting
connection that runs one of them on the asyncio loop."""
