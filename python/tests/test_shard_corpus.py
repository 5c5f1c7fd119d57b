"""The Shard corpus (shard_corpus.py) against its recorded outcomes
(test/Corpus/shard/expected.json): a stage that was ok must stay ok (a
regression fails here); a declined stage that now passes is reported, and
recorded with `python python/tests/shard_corpus.py --update`."""

import json

import pytest

import shard_corpus


@pytest.fixture(scope="module")
def results():
    try:
        shard_corpus.tools()
    except FileNotFoundError as err:
        pytest.skip(str(err))
    return shard_corpus.run_all()


def test_every_case_is_recorded(results):
    expected = json.loads(shard_corpus.EXPECTED.read_text())
    assert sorted(results) == sorted(expected), \
        "run shard_corpus.py --update after adding or removing a case"


def test_no_stage_that_passed_regresses(results):
    expected = json.loads(shard_corpus.EXPECTED.read_text())
    regressed, improved = [], []
    for name, want in expected.items():
        got = results.get(name, {})
        for stage in shard_corpus.STAGES:
            was, now = want.get(stage, "-"), got.get(stage, "-")
            if stage == "cuda" and now.startswith("- (no CUDA"):
                continue
            if was.startswith("ok") and not now.startswith("ok"):
                regressed.append(f"{name} {stage}: {now}")
            elif now.startswith("ok") and not was.startswith("ok"):
                improved.append(f"{name} {stage}")
    print(shard_corpus.counts(results))
    if improved:
        print("now passing (record with shard_corpus.py --update): " +
              ", ".join(improved))
    assert not regressed, "\n".join(regressed)
