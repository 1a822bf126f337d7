"""Delivery to consumers: each sink's backlog, the retry loop they share, and their kinds
(the push API's table server, a message broker)."""
