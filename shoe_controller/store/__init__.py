"""Durable storage: the journal (write side and its queries) and the controller that
applies an input and stores it in one step."""
