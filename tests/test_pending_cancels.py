"""The cancels ``mcemu run`` records in the home while its daemon is down (home.record_cancel)
and the recovering daemon applies (ClientHandlers.cancel_pending): each once, in job order, a
new cluster's jobs untouched, anything else in the directory ignored."""
import pytest

from emulator.live import home as homemod
from tests.fixtures.stub_daemon import Stub


def test_recorded_cancels_are_read_once_in_job_order_and_garbage_is_ignored(tmp_path):
    homemod.record_cancel(tmp_path, 12, "cancelled (Ctrl-C) while the daemon was down")
    homemod.record_cancel(tmp_path, 3, "x" * 500)
    d = tmp_path / homemod.CANCELS
    (d / "notajob").write_text("no")  # names that are not job ids
    (d / ("9" * 30)).write_text("too long")
    assert list(homemod.pending_cancels(tmp_path, take=False)) == [
        (3, "x" * 200), (12, "cancelled (Ctrl-C) while the daemon was down")]
    # a file goes once its job is dealt with: one whose handling failed (a daemon that died) stays
    with pytest.raises(RuntimeError):
        for jid, _ in homemod.pending_cancels(tmp_path):
            if jid == 12:
                raise RuntimeError("died while cancelling job 12")
    assert [j for j, _ in homemod.pending_cancels(tmp_path)] == [12]
    assert list(homemod.pending_cancels(tmp_path)) == []
    assert sorted(p.name for p in d.iterdir()) == sorted(["notajob", "9" * 30])


def test_a_new_clusters_daemon_drops_them_and_a_recovering_one_cancels_active_jobs(tmp_path):
    s = Stub(tmp_path)
    s.register_all()
    assert s.call("submit", request={"cube": 2}, runtime=50.0, command="sleep 9")["type"] == "ok"
    assert s.call("submit", request={"cube": 2}, runtime=50.0, command="sleep 9")["type"] == "ok"
    homemod.record_cancel(tmp_path, 1, "cancelled (Ctrl-C) while the daemon was down")
    homemod.record_cancel(tmp_path, 7, "no such job")
    s.d.from_clients.cancel_pending(recovered=False)
    assert [j.state for j in s.d.jobs.values()] == ["running", "queued"]
    assert list(homemod.pending_cancels(tmp_path, take=False)) == []
    homemod.record_cancel(tmp_path, 1, "cancelled (Ctrl-C) while the daemon was down")
    homemod.record_cancel(tmp_path, 2, "")
    s.d.from_clients.cancel_pending(recovered=True)
    (one, two) = s.d.jobs.values()
    assert (one.state, one.reason) == ("cancelled", "cancelled (Ctrl-C) while the daemon was down")
    assert (two.state, two.reason) == ("cancelled", "cancelled while the daemon was down")
