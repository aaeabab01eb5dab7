"""Mutation-testing tests for kvalign/shell/ (evaluate): expected values come from bash 5.x run
by hand on each fragment (recorded beside the test) or from the bash manual."""

from __future__ import annotations
