"""A private RabbitMQ node on 127.0.0.1 for tests and benches (broker.py says how), and a
cluster of them (cluster.py)."""

from shoe_testkit.broker.broker import Broker, BrokerError
from shoe_testkit.broker.cluster import Cluster
from shoe_testkit.broker.node import missing, scripts_dir

__all__ = ["Broker", "BrokerError", "Cluster", "missing", "scripts_dir"]
