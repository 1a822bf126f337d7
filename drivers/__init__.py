"""Device drivers: the shoe link protocol, byte transports, device adapters and simulators."""
