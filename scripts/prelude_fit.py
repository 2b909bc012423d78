"""Shared by the scripts that fit the C++ prelude's polynomials (scripts/fit_*_prelude.py): a
weighted least-squares fit reweighted towards the minimax (Lawson's method), its coefficients
rounded to float, and the C++ text of a Horner evaluation with float hex literals."""
import numpy as np


def minimax_float_fit(vander, ys, error_scale, rounds):
    """Coefficients (lowest first, rounded to float) of a fit of ys on the columns of vander whose
    error, scaled by error_scale (what an error in the polynomial costs the function), is near
    minimax; and that scaled error at each node."""
    weights = error_scale.copy()
    for _ in range(rounds):
        coefficients, *_ = np.linalg.lstsq(vander * weights[:, None], ys * weights, rcond=None)
        error = np.abs(vander @ coefficients - ys) * error_scale
        weights = weights * (1 + 5 * error / error.max())
    as_float = np.float32(coefficients).astype(np.float64)
    return as_float, np.abs(vander @ as_float - ys) * error_scale


def print_horner(coefficients, variable):
    """Prints `float p = ...; p = p * VARIABLE + ...;`, highest coefficient first."""
    ordered = [float(c) for c in coefficients[::-1]]
    print("float p = %s;" % c_hex(ordered[0]))
    for c in ordered[1:]:
        print("p = p * %s %s %s;" % (variable, "-" if c < 0 else "+", c_hex(abs(c))))


def c_hex(value):
    """A float as a C hex literal with its trailing zero digits dropped: -0x1.75e1c4p-8f."""
    mantissa, exponent = value.hex().split("p")
    return "%sp%sf" % (mantissa.rstrip("0").rstrip("."), exponent)
