"""The daemon's hand-kept Prometheus histograms (service/histogram.py): what a scrape of
`shoe_card_ack_seconds`, `shoe_round_seconds` and the others shows after some observations."""

from __future__ import annotations

from shoe_controller.service.histogram import Histogram


def test_buckets_are_cumulative_and_inclusive_of_their_bound() -> None:
    histogram = Histogram((0.1, 1.0))
    for seconds in (0.1, 0.5, 1.0, 2.0):
        histogram.observe(seconds)
    assert histogram.buckets() == [("0.1", 1.0), ("1.0", 3.0), ("+Inf", 4.0)]
    assert (histogram.count, histogram.sum) == (4, 3.6)


def test_a_value_above_every_bound_is_counted_only_in_inf_and_the_sum() -> None:
    histogram = Histogram((10.0, 20.0))
    histogram.observe(25.0)
    histogram.observe(5.0)
    assert histogram.buckets() == [("10.0", 1.0), ("20.0", 1.0), ("+Inf", 2.0)]
    assert histogram.sum == 30.0


def test_bounds_given_in_any_order_are_kept_in_order() -> None:
    histogram = Histogram((60.0, 1.0, 15.0))
    histogram.observe(2.0)
    assert histogram.bounds == (1.0, 15.0, 60.0)
    assert histogram.buckets() == [("1.0", 0.0), ("15.0", 1.0), ("60.0", 1.0), ("+Inf", 1.0)]


def test_nothing_observed_is_all_zero() -> None:
    assert Histogram((1.0,)).buckets() == [("1.0", 0.0), ("+Inf", 0.0)]
