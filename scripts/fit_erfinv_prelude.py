#!/usr/bin/env python3
"""Fits the polynomials of kiln_erfinv(float) in codegen/cpp/kiln_prelude.h and prints them.

The float erfinv is computed in double as |x| P(w), w = -log((1 - |x|)(1 + |x|)), with two
polynomials as in M. Giles' "Approximating the erfinv function" (GPU Computing Gems, 2011):
  P1(w - 2.5)        for w < 5      (|x| < 0.99663),
  P2(sqrt(w) - 3)    for 5 <= w     (up to w = 16.2: every float below 1 has w < 15.95).
Giles' single-precision coefficients have a relative error of 1.3e-7 (1 to 2 float ulp); these
are of degree 11, fitted to erfinv(x) / x from mpmath at 50 digits by weighted least squares
on Chebyshev nodes, reweighted (Lawson's method) towards the minimax relative error, which
ends below 1e-9: the float result is then within a hair of correct rounding.

Run it with the reference environment:  $(scripts/python-env) scripts/fit_erfinv_prelude.py
It prints the two polynomials as C++ and the largest relative error of each on a dense grid.
"""
import mpmath
import numpy as np

mpmath.mp.dps = 50
DEGREE = 11


def ratio_at(w):
    """erfinv(x) / x at the x with -log(1 - x^2) = w."""
    x = mpmath.sqrt(-mpmath.expm1(-mpmath.mpf(w)))
    if x == 0:
        return mpmath.sqrt(mpmath.pi) / 2
    return mpmath.erfinv(x) / x


def fit(z_low, z_high, w_of_z, nodes=400, rounds=30):
    k = np.arange(nodes)
    zs = (z_low + z_high) / 2 + (z_high - z_low) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    values = np.array([float(ratio_at(w_of_z(z))) for z in zs])
    basis = np.vander(zs, DEGREE + 1)
    weights = np.ones(nodes)
    for _ in range(rounds):
        scale = weights / values  # relative error
        coefficients, *_ = np.linalg.lstsq(basis * scale[:, None], values * scale, rcond=None)
        error = np.abs(basis @ coefficients - values) / values
        weights = weights * error / error.max() + 1e-30
        weights /= weights.sum()
    check = np.linspace(z_low, z_high, 4001)
    exact = np.array([float(ratio_at(w_of_z(z))) for z in check])
    worst = (np.abs(np.vander(check, DEGREE + 1) @ coefficients - exact) / exact).max()
    return coefficients, worst


def horner(name, variable, coefficients):
    lines = [f"  double {name} = {float(coefficients[0]).hex()};"]
    for c in coefficients[1:]:
        sign = "-" if c < 0 else "+"
        lines.append(f"  {name} = {name} * {variable} {sign} {abs(float(c)).hex()};")
    return "\n".join(lines)


def main():
    central, central_error = fit(-2.5, 2.5, lambda z: z + 2.5)
    tail, tail_error = fit(np.sqrt(5.0) - 3.0, np.sqrt(16.2) - 3.0, lambda z: (z + 3.0) ** 2)
    print(f"// P1: max relative error {central_error:.3g}; P2: {tail_error:.3g}")
    print(horner("central", "z1", central))
    print(horner("tail", "z2", tail))


if __name__ == "__main__":
    main()
