"""A trial's rules, made at plan time from its test spec and patch: the patch checks, the
eval script the supervisor runs, and which files the patch may not change.

Below the plan, the targets and grading (each of them applies these rules); above the
records (the rules are written into a TestSpec).
"""
