"""Solvers: exact QP backends, the working-set engine, and approximate online methods."""
