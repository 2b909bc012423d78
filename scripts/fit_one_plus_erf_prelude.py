#!/usr/bin/env python3
"""Fits the polynomial of kiln_one_plus_erf(float) in codegen/cpp/kiln_prelude.h and prints it.

kiln_one_plus_erf(x) is 1 + erf(x) = erfc(-x) as the generated code's GELU needs it (x/2 (1 + erf(x /
sqrt 2))): with u = |x| < 3.92, E = erfc(u) = exp(u P(u)), and 1 + erf(x) is 2 - E for x >= 0 and E
for x < 0. P (8 coefficients) is fitted to log(erfc(u)) / u from mpmath at 40 digits by least squares
on Chebyshev nodes of [0, 3.92], weighted by u erfc(u) so that the error counted is E's absolute
error (the error 1 + erf(x) has when computed in float, about an ulp of 1), and reweighted (Lawson's
method) towards the minimax.

Run it with the reference environment:  $(scripts/python-env) scripts/fit_one_plus_erf_prelude.py
It prints P as C++ (Horner, highest coefficient first; the prelude evaluates the same coefficients
by Estrin's scheme) and the largest absolute error of E on the nodes with the float coefficients.
"""
import mpmath
import numpy as np

from prelude_fit import minimax_float_fit, print_horner

mpmath.mp.dps = 40
END = 3.92
COEFFICIENTS = 8
NODES = 4000


def main():
    us = np.cos(np.linspace(0.0, np.pi, NODES)) * (END / 2) + END / 2
    us = us[us > 1e-6]  # log(erfc(u)) / u tends to -2 / sqrt(pi); the weight there is all but zero
    ys = np.array([float(mpmath.log(mpmath.erfc(u)) / u) for u in us])
    absolute = us * np.array([float(mpmath.erfc(u)) for u in us])  # an error in P, as E's absolute error
    vander = np.vander(us, COEFFICIENTS, increasing=True)
    as_float, error = minimax_float_fit(vander, ys, absolute, 40)
    print("// P(u) for 0 <= u < %g, highest coefficient first; largest absolute error of E %.3g (%.3f ulp of 1)"
          % (END, error.max(), error.max() / 2.0**-23))
    print_horner(as_float, "b")

if __name__ == "__main__":
    main()
