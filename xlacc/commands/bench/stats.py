"""A contender's samples as numbers a reader can trust: median, interquartile range, a
distribution-free 95% interval of the median, the sample count, and whether two differ beyond noise.

Hand-written rather than scipy's: the interval of a median needs only binomial tail sums, and
scipy is not a dependency of xlacc.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Sequence

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    median: float
    q1: float
    q3: float
    low: float  # the interval of the median
    high: float
    n: int
    coverage: float  # how sure the interval is: 0.95, or less where too few samples allow it

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def relative_spread(self) -> float:
        """Half the interval over the median: 0.01 reads as +-1%."""
        return (self.high - self.low) / 2 / self.median if self.median else math.inf

    def scaled(self, factor: float) -> Summary:
        """The same samples in other units (seconds to microseconds)."""
        return Summary(*(v * factor for v in (self.median, self.q1, self.q3, self.low, self.high)), self.n, self.coverage)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summarize(samples: Sequence[float]) -> Summary:
    if not samples:
        raise ValueError("no samples to summarize")
    ordered = sorted(float(s) for s in samples)
    n = len(ordered)
    if n == 1:
        q1 = q3 = ordered[0]
    else:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    lower, upper, coverage = median_interval_ranks(n)
    return Summary(statistics.median(ordered), q1, q3, ordered[lower], ordered[upper], n, coverage)


def median_interval_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int, float]:
    """0-based ranks (lower, upper) of the sorted samples that bound the median with at least
    ``confidence`` (binomial order statistics), and the coverage they give; with too few samples
    for that, the smallest and largest sample and their lower coverage."""
    best = (0, n - 1, 1.0 - 2 * 0.5**n if n > 1 else 0.0)
    for k in range(1, n // 2 + 1):  # the interval [x_(k), x_(n-1-k)] misses the median with probability 2 P(B <= k-1)
        miss = 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n
        if 1 - miss < confidence:
            break
        best = (k, n - 1 - k, 1 - miss)
    return best


@dataclass(frozen=True)
class Verdict:
    ratio: float  # the other's median over the base's: 2.0 means the other takes twice as long
    significant: bool  # the intervals do not overlap
    decidable: bool = True  # both intervals reach 95% (at least 6 samples each)

    @property
    def words(self) -> str:
        if not self.decidable:
            return f"{self.ratio:.2f}x its time, too few samples to tell"
        if not self.significant:
            return f"{self.ratio:.2f}x its time, within noise"
        return f"{self.ratio:.2f}x its time" + (" (slower)" if self.ratio > 1 else " (faster)")

    def to_json(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "significant": self.significant, "decidable": self.decidable}


def compare(base: Summary, other: Summary) -> Verdict:
    """The other against the base: a difference is significant only when the medians' 95%
    intervals do not overlap; with too few samples for such intervals, nothing is decided."""
    ratio = other.median / base.median if base.median else math.inf
    if min(base.coverage, other.coverage) < CONFIDENCE:
        return Verdict(ratio, False, decidable=False)
    overlap = other.low <= base.high and base.low <= other.high
    return Verdict(ratio, not overlap)
