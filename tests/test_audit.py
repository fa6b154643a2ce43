"""results.audit prints docs/tasks.md's tables of what the code rewards pay the programs fitted to the shown tests;
a mistake is one line and exit code 2."""
import pytest

from results import audit


def test_the_audit_table_has_a_row_per_family():
    lines = audit.audit_table(n=4).splitlines()
    assert lines[0].startswith("| family | constant pieces | lookup |") and len(lines) == 2 + 7   # every family
    assert all(0.0 <= float(cell) <= 1.0 for line in lines[2:] for cell in line.strip("|").split("|")[1:])


@pytest.mark.parametrize("argv, message", [([], "choose one of"), (["--templates", "--audit"], "choose one of"),
                                           (["--frobnicate"], "unrecognized arguments")])
def test_bad_input_is_one_line(capsys, argv, message):
    assert audit.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
