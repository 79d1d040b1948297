"""``--param KEY=VALUE`` means the same on every front end: ``mcemu simulate`` and ``mcemu up``
read each form alike (scheduler.stack.parse_params), so a policy studied live is the policy
simulated. Each live case is checked against the dict it must give (the live cluster's
``status()["config"]["params"]``), and ``mcemu simulate --json``'s ``params`` against
``mcemu up --json``'s (both write inf as "inf")."""
from __future__ import annotations

import json
import math

import pytest

from emulator.live import config as configmod
from scheduler.stack import StackError

# (policy options, --param forms, the params they must give): every form of true/false
# (true/false/on/off/yes/no), ints, floats, inf, lists (inf inside one too), each accepted by
# the policy it is given to
CASES = [
    (("--scheduler", "lazy"), ["threshold=20", "literal=yes"], {"threshold": 20, "literal": True}),
    (("--scheduler", "lazy"), ["threshold=2.5", "literal=off"], {"threshold": 2.5, "literal": False}),
    (("--scheduler", "lazy"), ["threshold=inf", "literal=true"], {"threshold": math.inf, "literal": True}),
    (("--scheduler", "lazy"), ["threshold=off", "literal=false"], {"threshold": False, "literal": False}),
    (("--gang", "multilevel"),
     ["insert_arrivals=off", "alternate=on", "local_sequential=yes", "levels=[[1,1],[3,8]]", "mpl=3",
      "service_queue=inf"],
     {"insert_arrivals": False, "alternate": True, "local_sequential": True, "levels": [[1, 1], [3, 8]],
      "mpl": 3, "service_queue": math.inf}),
    (("--gang", "multilevel"),
     ["insert-arrivals=true", "alternate=no", "levels=[[0.5, 2], [2, inf]]", "service_queue=4"],
     {"insert_arrivals": True, "alternate": False, "levels": [[0.5, 2], [2, math.inf]], "service_queue": 4}),
]


def _plain(x):
    """JSON's spelling of a params dict (``mcemu simulate --json`` writes inf as "inf")."""
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _param_args(forms):
    return [a for f in forms for a in ("--param", f)]


@pytest.mark.parametrize("forms, expected", [(f, e) for _, f, e in CASES])
def test_the_daemon_reads_each_form_as_the_stack_does(forms, expected):
    got = configmod.given(params=forms)["params"]
    assert got == expected and [type(v) for v in got.values()] == [type(v) for v in expected.values()]


@pytest.mark.parametrize("form, value", [
    ("x=none", None), ("x=null", None), ("x=text", "text"), ("x=1e3", 1000.0), ("x=-inf", -math.inf),
    ("x={\"a\": [1, inf]}", {"a": [1, math.inf]}), ("x= 7 ", 7), ("x=[]", []),
])
def test_forms_a_policy_would_refuse_still_parse_alike(form, value):
    """Values no registered policy takes: what both front ends hand to the policy."""
    assert configmod.given(params=[form])["params"] == {"x": value}


@pytest.mark.parametrize("form", ["x", "=1", "1x=2", "x=[1, 2"])
def test_malformed_forms_are_refused(form):
    with pytest.raises(StackError):
        configmod.given(params=[form])


def test_mpl_is_the_gang_parameter_mpl():
    assert configmod.given(gang="round-robin", params=["slot=0.5"], mpl=6)["params"] == {"slot": 0.5, "mpl": 6}
    assert configmod.given(gang="round-robin", params=["mpl=6"], mpl=6)["params"] == {"mpl": 6}
    assert configmod.given()["params"] is None  # nothing asked: the journal's params stand
    with pytest.raises(ValueError, match="--mpl needs --gang"):
        configmod.given(mpl=6)
    with pytest.raises(ValueError, match="disagree"):
        configmod.given(gang="round-robin", params=["mpl=8"], mpl=6)
    with pytest.raises(ValueError, match="given twice"):
        configmod.given(params=["threshold=1", "threshold=2"])


def test_a_restart_compares_each_asked_param_with_the_journal():
    journal = configmod.resolve(None, configmod.given(gang="round-robin", params=["slot=0.5"], mpl=4))
    again = configmod.resolve(journal, configmod.given(gang="round-robin", mpl=4))  # slot not asked again
    assert again["params"] == {"slot": 0.5, "mpl": 4}
    with pytest.raises(ValueError, match="--param slot=0.5"):
        configmod.resolve(journal, configmod.given(gang="round-robin", params=["slot=1"]))
    old = {**journal, "gang": "none", "params": {}}  # an older daemon kept "none" as given
    assert configmod.resolve(old, configmod.given(gang="none"))["gang"] is None


@pytest.mark.parametrize("hb, liveness", [(0.0005, 3), (4000, 3), (0.2, 0), (0.2, 5000)])
def test_heartbeat_and_liveness_within_what_a_node_accepts(hb, liveness):
    with pytest.raises(ValueError, match="--heartbeat must be within"):
        configmod.resolve(None, configmod.given(heartbeat=hb, liveness=liveness))


def test_an_older_gang_journal_is_refused_not_replayed_differently():
    cfg = configmod.resolve(None, configmod.given(gang="multilevel"))
    with pytest.raises(ValueError, match="older mcemu"):
        configmod.check_format({"config": cfg}, cfg)
    configmod.check_format({"config": cfg, "format": configmod.FORMAT}, cfg)
    configmod.check_format({"config": cfg, "format": 2}, cfg)  # format 3 changed disciplines only
    lazy = configmod.resolve(None, configmod.given())
    with pytest.raises(ValueError, match="older mcemu for this cluster"):  # held jobs: format 3
        configmod.check_format({"config": lazy, "format": 2}, lazy)
    configmod.check_format({"config": lazy, "format": configmod.FORMAT}, lazy)


@pytest.mark.live
@pytest.mark.parametrize("policy, forms, expected", CASES)
def test_simulate_and_up_report_the_same_params(cluster, policy, forms, expected):
    sim = cluster.mcemu("simulate", "--json", "--topology", "hypercube:2", *policy, "--load", "0.5", "--jobs", "20",
                        "--seed", "3", *_param_args(forms), timeout=120)
    sim_params = json.loads(sim.stdout)["params"]
    up = cluster.up("--topology", "hypercube:2", *policy, *_param_args(forms))  # `mcemu up --json`
    live = cluster.client.status()["config"]["params"]
    assert live == expected
    assert sim_params == up["config"]["params"] == _plain(expected)
    cluster.down()
