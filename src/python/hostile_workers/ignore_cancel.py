# TEST-ONLY hostile worker variant `ignore-cancel`, selected by the harness
# when VCC_TEST_WORKER_VARIANT=ignore-cancel (worker A only). Appended after
# worker.py.
#
# Its daemon ignores the hub's `run.cleanup` and its own task cancellation,
# and the job's child and grandchild ignore SIGTERM: the job keeps running
# after the hub forgot it. The `cancel-quiescence` check must see it alive,
# escalate to SIGKILL and name the processes that needed it.

IGNORE_TERM = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"


class IgnoreCancelHooks(Hooks):
    child_source = IGNORE_TERM + CHILD_SOURCE
    grandchild_source = IGNORE_TERM + GRANDCHILD_SOURCE
    cancel_on_cleanup = False

    async def on_job_cancelled(self, proc):
        return None


main(IgnoreCancelHooks())
