"""Delivery to consumers: the push API's wire format and the publisher."""
