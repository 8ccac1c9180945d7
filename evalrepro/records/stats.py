"""Intervals and tests as a comparison records them, and the verdict each one reads as.
Computed by ``evalrepro.report.stats``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

#: Fewer clusters than this and a cluster bootstrap's interval is unreliable.
MIN_CLUSTERS = 10


class Interval(BaseModel):
    """An estimate with a confidence interval; ``method`` says how it was made."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    estimate: float
    low: float
    high: float
    #: Shown verbatim in reports: "wilson", "Tango score", "BCa bootstrap", "percentile
    #: bootstrap", "basic bootstrap", "percentile bootstrap (BCa undefined)", "cluster
    #: percentile" or "degenerate" (zero-width: nothing to resample).
    method: str
    confidence: float = 0.95
    #: Standard deviation of the bootstrap distribution (bootstrap intervals only).
    standard_error: float | None = None

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


class ClusterInterval(Interval):
    """A cluster bootstrap interval, with how many clusters it rests on."""

    n_clusters: int
    too_few_clusters: bool
    note: str = ""


class McNemar(BaseModel):
    """Discordant pairs and the exact two-sided McNemar p-value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    a_only: int  # resolved by A, not by B
    b_only: int  # resolved by B, not by A
    p_value: float


class SignFlip(BaseModel):
    """The paired sign-flip (permutation) test of per-instance differences in rates: with
    no difference between the runs, each nonzero difference is as likely to be negative
    as positive, so the observed |sum| is compared with those of every sign pattern. On
    0/1 outcomes it is exact McNemar's test; it is what keeps a verdict on rates honest
    at small n, where a bootstrap interval alone is too narrow."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Instances whose rates differ between the runs (the rest carry no sign).
    nonzero: int
    p_value: float
    #: None when all 2**nonzero sign patterns were counted (exact); else the number of
    #: random patterns drawn (p = (1 + as extreme) / (1 + resamples)).
    resamples: int | None = None

    @property
    def name(self) -> str:
        return "exact sign-flip" if self.resamples is None else "sign-flip"


class Comparison(BaseModel):
    """Run B against run A on the same n instances (B - A: positive means B resolves more)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    confidence: float
    rate_a: Interval
    rate_b: Interval
    difference: Interval
    #: None when the outcomes are rates in [0, 1] rather than 0/1 (McNemar needs pairs).
    mcnemar: McNemar | None
    #: None when a run is constant (e.g. resolves everything): then it is undefined.
    correlation: float | None
    standard_error: float
    #: True difference detectable with 80% power at alpha = 1 - confidence, two-sided.
    minimum_detectable_difference: float
    cluster: ClusterInterval | None = None
    #: The test behind a verdict on rates (None for 0/1 outcomes, and in records made
    #: before it, where the interval alone decided).
    sign_flip: SignFlip | None = None

    def verdict(self) -> str:
        """One line, e.g. "B resolves 3.1 points more (95% CI -1.2 to 7.4; exact McNemar
        p=0.21): not distinguishable at this n"; see the module docstring for the rule."""
        d = self.difference
        level = level_label(self.confidence)
        if d.method == "degenerate":
            detail = f"all {self.n} paired differences equal, no interval"
        else:
            detail = f"{level} CI {_points(d.low)} to {_points(d.high)}"
        test = self._test()
        if test is not None:
            detail += f"; {test[0]} {p_phrase(test[1])}"
        direction, why = self._decision()
        line = f"{_difference_phrase(d.estimate)} ({detail}): {_conclusion(direction)}"
        return f"{line} ({'; '.join(why)})" if why else line

    def _test(self) -> tuple[str, float] | None:
        """The test that must agree with the interval: exact McNemar for 0/1 outcomes,
        the sign-flip test for rates; none in rate records made before it."""
        if self.mcnemar is not None:
            return "exact McNemar", self.mcnemar.p_value
        if self.sign_flip is not None:
            return self.sign_flip.name, self.sign_flip.p_value
        return None

    def _decision(self) -> tuple[int, list[str]]:
        """+1 when B is better, -1 when A is, 0 when they cannot be told apart; and why
        not, when the methods disagree, plus the by-repo sensitivity when it differs."""
        d, test = self.difference, self._test()
        alpha = f"{1 - self.confidence:.3g}"
        why: list[str] = []
        if test is None:
            # Rates in an older record: the bootstrap interval alone; a zero-width one has
            # no test behind it.
            direction = 0 if d.method == "degenerate" else _interval_direction(d)
        else:
            name, p_value = test
            by_test = 0 if p_value >= 1 - self.confidence else _sign(d.estimate)
            # A zero-width interval is no evidence of its own: the exact test decides.
            by_interval = by_test if d.method == "degenerate" else _interval_direction(d)
            direction = by_interval if by_interval == by_test else 0
            if by_interval and not by_test:
                why.append(f"the interval excludes 0 but {name} p >= {alpha}")
            elif by_test and not by_interval:
                why.append(f"{name} p < {alpha} but the interval includes 0")
            elif by_interval != by_test:
                why.append(f"the interval and the {name} test point opposite ways")
        c = self.cluster
        if c is None or c.method == "degenerate":
            return direction, why
        by_repo = _interval_direction(c)
        if by_repo == direction:
            return direction, why
        clustered = (
            f"{level_label(c.confidence)} CI {_points(c.low)} to {_points(c.high)}, "
            f"{c.n_clusters} clusters"
        )
        if c.too_few_clusters:
            # Too few clusters to trust: mentioned, never deciding (semantics.md).
            why.append(f"by-repo sensitivity: {clustered}, too few to trust")
        elif direction:
            side = "includes 0" if by_repo == 0 else "points the other way"
            why.append(f"by-repo sensitivity: {clustered}, {side}")
            direction = 0
        else:
            # A sensitivity check only makes a claim more cautious, never makes one.
            why.append(f"by-repo sensitivity: {clustered}")
        return direction, why


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def _interval_direction(interval: Interval) -> int:
    if interval.low > 0:
        return 1
    if interval.high < 0:
        return -1
    return 0


def _conclusion(direction: int) -> str:
    return {1: "B is better at this n", -1: "A is better at this n"}.get(
        direction, "not distinguishable at this n"
    )


def _points(value: float) -> str:
    # + 0.0 turns a rounded -0.0 into 0.0.
    return f"{round(value * 100, 1) + 0.0:.1f}"


def level_label(confidence: float) -> str:
    """A confidence level as reports print it: 0.95 -> "95%", a Bonferroni-corrected
    1 - 0.05/3 -> "98.33%"."""
    return f"{round(confidence * 100, 2):g}%"


def p_label(p: float) -> str:
    """A p-value as every output prints it (verdicts, tables, LaTeX, HTML): one rounding
    rule, three significant digits; below 0.0001, where that would need an exponent,
    "<0.0001"."""
    return "<0.0001" if p < 0.0001 else f"{p:.3g}"


def p_phrase(p: float) -> str:
    """ "p=0.00781", or "p<0.0001"."""
    label = p_label(p)
    return f"p{label}" if label.startswith("<") else f"p={label}"


def _difference_phrase(estimate: float) -> str:
    if estimate == 0:
        return "B resolves as many as A"
    return f"B resolves {_points(abs(estimate))} points {'more' if estimate > 0 else 'fewer'}"
