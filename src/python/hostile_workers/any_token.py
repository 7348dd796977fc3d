# TEST-ONLY hostile worker variant `any-token`, selected by the harness when
# VCC_TEST_WORKER_VARIANT=any-token (worker A only). Appended after worker.py.
#
# It starts the SDK's hub with an empty token, which the hub treats as "no
# authentication": its listener accepts any token, including worker B's. The
# `listener-token-separation` check must refuse it.


class AnyTokenHooks(Hooks):
    def hub_token(self, token):
        return ""


main(AnyTokenHooks())
