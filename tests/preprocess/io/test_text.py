"""What the fast readers share (preprocess.io.text): the number parser."""

from __future__ import annotations

import numpy as np

from preprocess.io.text import _table


def test_number_parser_matches_numpy(tmp_path):
    """Decimal text to float64 exactly as numpy's parser (strtod): the fast path where it is
    exact, numpy for the rest."""
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.normal(size=300) * 10.0 ** rng.integers(-30, 30, 300),
                             rng.random(100), [0.1, 0.2, 0.3, 1e22, 1e23, 5e-324, 2.0**53 + 1]])
    texts = [repr(x) for x in values.tolist()] + [f"{x:.6f}" for x in values[:100]]
    texts += [f"{x:.25e}" for x in values[:50]] + ["-0", "+1.5", "1.", ".5", "1e400", "nan"]
    text = " ".join(texts)
    got = _table(text.encode(), 0, 1, skip_blank=False)
    with np.errstate(all="ignore"):
        expect = np.fromstring(text, sep=" ")
    assert got is not None
    np.testing.assert_array_equal(got[0].view(np.uint64)[:-1], expect.view(np.uint64)[:-1])
    assert np.isnan(got[0][-1])
