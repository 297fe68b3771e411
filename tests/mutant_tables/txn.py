# SPDX-License-Identifier: MIT
"""Mutants of changes/txn.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("purge_at_the_change_not_the_commit", "changes/txn.c",
           "\tif (rules_change(t->rules, ev, on_tag, t, err, errlen) == -1)\n"
           "\t\treturn TXN_ERROR;\n\treturn TXN_MORE;",
           "\tif (rules_change(t->rules, ev, on_tag, t, err, errlen) == -1)\n"
           "\t\treturn TXN_ERROR;\n"
           "\tt->out = (struct changes_commit){ (const char *const *)t->exact.v,\n"
           "\t    t->exact.n, CHANGES_EXACT, t->begin_lsn, 0, NULL };\n"
           "\treturn TXN_READY;",
           ["rollback_purges_nothing_three_touches_purge_once", "test_pgoutput"],
           "each row change is purged as it comes, not once per tag at its commit"),
    Mutant("uncommitted_transaction_applied", "changes/txn.c",
           "\t\tif (t->open) {\n"
           "\t\t\tsnprintf(err, errlen, \"a Begin inside a transaction\");\n"
           "\t\t\treturn TXN_ERROR;\n\t\t}\n\t\tbegin(t, ev);",
           "\t\tif (!t->open)\n\t\t\tbegin(t, ev);\n\t\tt->begin_lsn = ev->lsn;",
           ["test_pgoutput"],
           "the changes of a transaction whose Commit never came (rolled back, from "
           "the stream's view) are applied with the next transaction's"),
]
