"""The neutral core: ids, names, tallies and interval algorithms that every other package uses.

Nothing here imports another package of nsys2prv (tests/test_architecture.py keeps it so).
"""
