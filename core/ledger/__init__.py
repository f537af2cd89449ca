"""Side effects and approvals: the ledger's states, guards, and how ledgers merge across stores."""
