"""The client's door, differentially: every byte stream of
tests/fixtures/door/streams.py, sent to a real corral, makes the responses,
closes, access-log lines, origin requests and upstream hosts recorded in
tests/fixtures/door/golden.json (tests/door_diff.py says how, and what is
normalised). Whatever reads clients' bytes in place of proxy/proxy_frame.c
must make the same of them; a change meant to differ
records the golden file again and shows the difference in its diff.
"""

import door_diff
from harness import scenario


@scenario
def door_streams_make_the_requests_and_refusals_of_the_golden_record(env):
    want = door_diff.load_golden(door_diff.GOLDEN)
    got = door_diff.run(env, door_diff.load_streams())
    diffs = door_diff.differences(want, got)
    if diffs:
        raise AssertionError(
            f"{len(diffs)} of {len(want)} streams differ from tests/fixtures/door/golden.json "
            f"(record it again with tests/door_diff.py --record if the change is meant):\n"
            + door_diff.report(diffs))
