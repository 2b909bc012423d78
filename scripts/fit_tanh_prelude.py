#!/usr/bin/env python3
"""Fits the polynomial of kiln_tanh(float) in codegen/cpp/kiln_prelude.h and prints it.

Below |x| = 0.625 the float tanh is |x| + |x|^3 P(x^2), P of 5 coefficients; from 0.625 on it is
(1 - e) / (1 + e) with e = exp(-2|x|), which needs no polynomial of its own. P is fitted to
(tanh(x) - x) / x^3 from mpmath at 40 digits by least squares on Chebyshev nodes of [0, 0.625],
weighted by x^3 / tanh(x) so that the error counted is tanh's relative error, and reweighted
(Lawson's method) towards the minimax: it ends near 9e-9 (0.16 ulp) before the coefficients are
rounded to float.

Run it with the reference environment:  $(scripts/python-env) scripts/fit_tanh_prelude.py
It prints P as C++ (Horner, highest coefficient first) and the largest relative error on the nodes
with the float coefficients.
"""
import mpmath
import numpy as np

from prelude_fit import minimax_float_fit, print_horner

mpmath.mp.dps = 40
SPLIT = 0.625
COEFFICIENTS = 5
NODES = 4000


def tail_ratio(x):
    """(tanh(x) - x) / x^3."""
    x = mpmath.mpf(x)
    return (mpmath.tanh(x) - x) / x**3


def main():
    xs = np.cos(np.linspace(0.0, np.pi, NODES)) * (SPLIT / 2) + SPLIT / 2
    xs = xs[xs > 1e-4]  # the ratio tends to -1/3; below this the weight is all but zero
    ys = np.array([float(tail_ratio(x)) for x in xs])
    z = xs**2
    relative = xs**3 / np.tanh(xs)  # an error in P, as an error relative to tanh
    vander = np.vander(z, COEFFICIENTS, increasing=True)
    as_float, error = minimax_float_fit(vander, ys, relative, 30)
    print("// P(z) for |x| < %g, highest coefficient first; largest relative error %.3g (%.3f ulp)"
          % (SPLIT, error.max(), error.max() / 2.0**-24))
    print_horner(as_float, "z")

if __name__ == "__main__":
    main()
