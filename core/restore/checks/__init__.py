"""The checks of restore validation (DESIGN §5), one module per subject.

`checkpoint` (schema, completeness), `repository` (the user's repository, branch, target,
lockfiles, upstream), `environment` (runtime, harness, credentials, transcript), `ledger` (side
effects, approvals, leases) and `limits` (age, budget). `core.restore.validate` runs them in one
fixed order.
"""
