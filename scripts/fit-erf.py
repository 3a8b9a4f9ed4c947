#!/usr/bin/env python3
"""Fits the rational erf that kiln-approximate-math emits for f32:

  erf(x) ~= x * P(x^2) / Q(x^2),  x clamped to [-C, C],  Q(0) = 1

P of degree 4 and Q of degree 5 in x^2, by Loeb's linearized least squares
with Lawson's reweighting toward the minimax error. Prints the coefficients
(f32) and the largest error over a dense grid, evaluated in f32 with one
rounding per fused multiply-add as the generated code does. Needs numpy.

  python3 scripts/fit-erf.py
"""
import math

import numpy as np

C = 3.92  # erf(3.92) rounds to 1 in f32
P_TERMS, Q_TERMS = 5, 5


def fit(x, f, iters=300):
    t = x * x
    q_now, w, best = np.ones_like(x), np.full_like(x, 1 / len(x)), None
    for _ in range(iters):
        a = np.hstack([np.stack([x * t**i for i in range(P_TERMS)], 1),
                       np.stack([-f * t**j for j in range(1, Q_TERMS + 1)], 1)])
        s = np.sqrt(w) / q_now
        coef, *_ = np.linalg.lstsq(a * s[:, None], f * s, rcond=None)
        p, q = coef[:P_TERMS], np.concatenate([[1.0], coef[P_TERMS:]])
        q_now = np.polyval(q[::-1], t)
        err = x * np.polyval(p[::-1], t) / q_now - f
        if best is None or np.abs(err).max() < best[2]:
            best = (p, q, np.abs(err).max())
        w = w * np.sqrt(np.abs(err)) + 1e-30
        w /= w.sum()
    return best


def horner_f32(coefs, t):
    r = np.full_like(t, np.float32(coefs[-1]))
    for c in coefs[-2::-1]:  # fma: one rounding a step
        r = (r.astype(np.float64) * t + np.float64(np.float32(c))).astype(np.float32)
    return r


def main():
    x = np.linspace(0, C, 200001)
    p, q, err = fit(x, np.vectorize(math.erf)(x))
    xs = np.linspace(-6, 6, 2000001).astype(np.float32)
    xc = np.clip(xs, -np.float32(C), np.float32(C))
    t = xc * xc
    got = (xc * horner_f32(p, t)) / horner_f32(q, t)
    err32 = np.abs(got.astype(np.float64) - np.vectorize(math.erf)(xs.astype(np.float64))).max()
    print(f"max error: {err:.3g} (exact arithmetic), {err32:.3g} (f32)")
    print("P:", ", ".join(f"{np.float32(c)}f" for c in p))
    print("Q:", ", ".join(f"{np.float32(c)}f" for c in q))


if __name__ == "__main__":
    main()
