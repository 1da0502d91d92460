"""The statistics behind every figure of `xlacc bench`: median, interquartile range, the 95%
interval of the median, and the verdict that a difference is within noise."""

from __future__ import annotations

import random

import pytest

from xlacc.commands.bench import stats


def test_summary_of_known_samples():
    summary = stats.summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (summary.median, summary.q1, summary.q3, summary.n) == (3.0, 2.0, 4.0, 5)
    assert summary.iqr == 2.0
    # Five samples cannot bound a median with 95%: the smallest and largest, and the 93.75% they give.
    assert (summary.low, summary.high) == (1.0, 5.0) and summary.coverage == pytest.approx(1 - 2 / 32)


@pytest.mark.parametrize("n, ranks", [(6, (0, 5)), (9, (1, 7)), (20, (5, 14)), (100, (39, 60))])
def test_the_median_interval_is_the_binomial_order_statistics(n, ranks):
    """The textbook ranks (1-based 6..15 of 20, 40..61 of 100), each covering at least 95%."""
    lower, upper, coverage = stats.median_interval_ranks(n)
    assert (lower, upper) == ranks
    assert 0.95 <= coverage < 0.98


def test_the_interval_holds_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(3)
    hits = sum(s.low <= 0.0 <= s.high for s in (stats.summarize([rng.gauss(0, 1) for _ in range(30)]) for _ in range(2000)))
    assert 0.93 <= hits / 2000 <= 0.99


def test_overlapping_intervals_are_within_noise():
    base = stats.summarize([10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.1, 10.0])
    close = stats.summarize([10.1, 10.3, 10.0, 10.2, 10.1, 10.4, 9.9, 10.2, 10.1])
    verdict = stats.compare(base, close)
    assert not verdict.significant and verdict.words.endswith("within noise")


def test_separate_intervals_are_a_difference():
    base = stats.summarize([10.0 + 0.01 * i for i in range(20)])
    slower = stats.summarize([20.0 + 0.01 * i for i in range(20)])
    verdict = stats.compare(base, slower)
    assert verdict.significant and verdict.ratio == pytest.approx(2.0, rel=0.01)
    assert "(slower)" in verdict.words
    assert "(faster)" in stats.compare(slower, base).words


def test_too_few_samples_decide_nothing():
    """One sample each is a point: points never overlap, yet say nothing about noise."""
    verdict = stats.compare(stats.summarize([10.0]), stats.summarize([17.0]))
    assert not verdict.significant and not verdict.decidable
    assert verdict.words == "1.70x its time, too few samples to tell"
    five = stats.compare(stats.summarize([1.0, 1.1, 1.2, 1.3, 1.4]), stats.summarize([9.0] * 5))
    assert not five.decidable  # five samples bound a median with 94% at best


def test_scaled_keeps_the_count_and_coverage():
    summary = stats.summarize([1e-6, 2e-6, 3e-6]).scaled(1e6)
    assert summary.median == pytest.approx(2.0) and summary.n == 3


def test_no_samples_is_an_error():
    with pytest.raises(ValueError):
        stats.summarize([])
