#!/usr/bin/env python3
"""Fits the polynomial of kiln_one_plus_erf(float) in codegen/cpp/kiln_prelude.h and prints it.

kiln_one_plus_erf(x) is 1 + erf(x) = erfc(-x) as the generated code's GELU needs it (x/2 (1 + erf(x /
sqrt 2))): with u = |x| < 3.92, E = erfc(u) = exp(u P(u)), and 1 + erf(x) is 2 - E for x >= 0 and E
for x < 0. P (8 coefficients) is fitted to log(erfc(u)) / u from mpmath at 40 digits by least squares
on Chebyshev nodes of [0, 3.92], weighted by u erfc(u) so that the error counted is E's absolute
error (the error 1 + erf(x) has when computed in float, about an ulp of 1), and reweighted (Lawson's
method) towards the minimax.

Run it with the reference environment:  $(scripts/python-env) scripts/fit_one_plus_erf_prelude.py
It prints P as C++ (Horner, highest coefficient first) and the largest absolute error of E on the
nodes with the float coefficients.
"""
import mpmath
import numpy as np

mpmath.mp.dps = 40
END = 3.92
COEFFICIENTS = 8
NODES = 4000


def main():
    us = np.cos(np.linspace(0.0, np.pi, NODES)) * (END / 2) + END / 2
    us = us[us > 1e-6]  # log(erfc(u)) / u tends to -2 / sqrt(pi); the weight there is all but zero
    ys = np.array([float(mpmath.log(mpmath.erfc(u)) / u) for u in us])
    absolute = us * np.array([float(mpmath.erfc(u)) for u in us])  # an error in P, as E's absolute error
    weights = absolute.copy()
    vander = np.vander(us, COEFFICIENTS, increasing=True)
    for _ in range(40):
        coefficients, *_ = np.linalg.lstsq(vander * weights[:, None], ys * weights, rcond=None)
        error = np.abs(vander @ coefficients - ys) * absolute
        weights = weights * (1 + 5 * error / error.max())
    as_float = np.float32(coefficients).astype(np.float64)
    error = np.abs(vander @ as_float - ys) * absolute
    print("// P(u) for 0 <= u < %g, highest coefficient first; largest absolute error of E %.3g (%.3f ulp of 1)"
          % (END, error.max(), error.max() / 2.0**-23))
    ordered = [float(c) for c in as_float[::-1]]
    print("float p = %s;" % c_hex(ordered[0]))
    for c in ordered[1:]:
        print("p = p * b %s %s;" % ("-" if c < 0 else "+", c_hex(abs(c))))


def c_hex(value):
    """A float as a C hex literal with its trailing zero digits dropped: -0x1.75e1c4p-8f."""
    mantissa, exponent = value.hex().split("p")
    return "%sp%sf" % (mantissa.rstrip("0").rstrip("."), exponent)


if __name__ == "__main__":
    main()
