"""Chi-squared goodness of fit (scipy) for the exactness tests.

chisq_pvalue(counts, probs) pools cells whose expected count is below 5 into
one cell (and that cell into its smallest neighbour if still below 5), and
returns 0 when a count falls on a zero-probability cell.  The same helper
must reject a slightly wrong law on the same samples (power checks), so a
test that passes is evidence of the law, not of a toothless test."""
import numpy as np
from scipy import stats

ALPHA = 1e-3  # fits pass at p > ALPHA; wrong laws must give p < ALPHA


def chisq_pvalue(counts, probs, min_expected: float = 5.0) -> float:
    counts = np.asarray(counts, dtype=np.float64).ravel()
    probs = np.asarray(probs, dtype=np.float64).ravel()
    assert counts.shape == probs.shape, (counts.shape, probs.shape)
    assert abs(probs.sum() - 1.0) < 1e-6, probs.sum()
    n = counts.sum()
    assert n > 0
    if np.any(counts[probs <= 0] > 0):
        return 0.0
    keep = probs > 0
    counts, expected = counts[keep], probs[keep] * n
    small = expected < min_expected
    if small.any():
        pooled_c, pooled_e = counts[small].sum(), expected[small].sum()
        counts, expected = counts[~small], expected[~small]
        if pooled_e >= min_expected or counts.size == 0:
            counts = np.append(counts, pooled_c)
            expected = np.append(expected, pooled_e)
        else:
            i = int(np.argmin(expected))
            counts[i] += pooled_c
            expected[i] += pooled_e
    if counts.size < 2:
        return 1.0
    expected *= counts.sum() / expected.sum()
    return float(stats.chisquare(counts, expected).pvalue)


def assert_fits(counts, probs, what: str = "") -> float:
    p = chisq_pvalue(counts, probs)
    assert p > ALPHA, f"{what}: chi-squared p = {p:.3g} <= {ALPHA} (law rejected)"
    return p


def assert_rejects(counts, wrong_probs, what: str = "") -> float:
    p = chisq_pvalue(counts, wrong_probs)
    assert p < ALPHA, f"{what}: a wrong law was not rejected (p = {p:.3g}): the test lacks power"
    return p
