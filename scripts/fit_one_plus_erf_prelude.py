#!/usr/bin/env python3
"""Fits the two polynomials of kiln_one_plus_erf(float) in codegen/cpp/kiln_prelude.h and prints them.

kiln_one_plus_erf(x) is 1 + erf(x) = erfc(-x) as the generated code's GELU needs it (x/2 (1 + erf(x /
sqrt 2))): with u = |x| < 3.92, E = erfc(u) = 2^(u P(u)), and 1 + erf(x) is 2 - E for x >= 0 and E
for x < 0. P (8 coefficients) is fitted to log2(erfc(u)) / u from mpmath at 40 digits by least squares
on Chebyshev nodes of [0, 3.92], weighted by u erfc(u) ln 2 so that the error counted is E's absolute
error (the error 1 + erf(x) has when computed in float, about an ulp of 1), and reweighted (Lawson's
method) towards the minimax. 2^r on |r| <= 1/2 (r = q - rint(q), q = u P(u)) is 1 + r Q(r), Q (6
coefficients) fitted to (2^r - 1) / r weighted by |r| / 2^r, the relative error of 2^r.

Run it with the reference environment:  $(scripts/python-env) scripts/fit_one_plus_erf_prelude.py
It prints P and Q as C++ (Horner, highest coefficient first; the prelude evaluates P's coefficients
by Estrin's scheme) and the largest errors on the nodes with the float coefficients: E's absolute
error in ulps of 1 (2^-23), and 2^r's relative error in units of 2^-24.
"""
import mpmath
import numpy as np

from prelude_fit import minimax_float_fit, print_horner

mpmath.mp.dps = 40
END = 3.92
COEFFICIENTS = 8
NODES = 4000
EXP2_COEFFICIENTS = 6


def main():
    us = np.cos(np.linspace(0.0, np.pi, NODES)) * (END / 2) + END / 2
    us = us[us > 1e-6]  # log2(erfc(u)) / u tends to -2 / (sqrt(pi) ln 2); the weight there is all but zero
    ys = np.array([float(mpmath.log(mpmath.erfc(u), 2) / u) for u in us])
    # an error in P, as E's absolute error
    absolute = us * np.array([float(mpmath.erfc(u)) for u in us]) * np.log(2.0)
    vander = np.vander(us, COEFFICIENTS, increasing=True)
    as_float, error = minimax_float_fit(vander, ys, absolute, 40)
    print("// P(u) for 0 <= u < %g, highest coefficient first; largest absolute error of E %.3g (%.3f ulp of 1)"
          % (END, error.max(), error.max() / 2.0**-23))
    print_horner(as_float, "b")

    rs = np.cos(np.linspace(0.0, np.pi, NODES)) * 0.5
    rs = rs[np.abs(rs) > 1e-9]
    ys = np.array([float((mpmath.power(2, r) - 1) / r) for r in rs])
    relative = np.abs(rs) / np.array([float(mpmath.power(2, r)) for r in rs])  # an error in Q, relative to 2^r
    vander = np.vander(rs, EXP2_COEFFICIENTS, increasing=True)
    as_float, error = minimax_float_fit(vander, ys, relative, 40)
    print("// Q(r) for |r| <= 1/2, highest coefficient first (then p = p * r + 1.0f); largest relative error "
          "of 2^r %.3g (%.3f x 2^-24)" % (error.max(), error.max() / 2.0**-24))
    print_horner(as_float, "r")

if __name__ == "__main__":
    main()
