"""Approval through the ACP client: ``session/request_permission`` for each step, and Edit
where the client can show a form.

Preview (``core.preview``) is an option of its own (id ``preview``, kind allow_once): the
step runs in a disposable copy and the question comes again, its tool call carrying what the
preview printed and would change.

ACP's permission options carry no code, so Edit is a fifth option (id ``edit``) offered
only to a client that advertises form elicitation (``clientCapabilities.elicitation.form``,
unstable in ACP): choosing it opens ``elicitation/create`` with one text field holding the
code; what the client accepts runs (logged "edited"), a declined form asks again, a
cancelled one stops the instruction.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError

from oi_kernel.acp import updates as U
from oi_kernel.core.types import ApprovalRequest, Decision
from oi_kernel.errors import OIError


class ClientApprover:
    """Asks the ACP client (``session/request_permission``) about each step; the step's
    tool call has been sent before the question."""

    shows_code = True

    def __init__(self, state: Any) -> None:
        self.state = state  # the AcpSession: id, conn, outbox, can_edit

    async def decide(self, request: ApprovalRequest) -> Decision:
        state = self.state
        await state.outbox.drain()
        call, options = U.permission_request(request, edit=state.can_edit)
        while True:
            try:
                response = await state.conn.request_permission(
                    session_id=state.id, tool_call=call, options=options)
            except ConnectionError:
                return Decision("stop", reason="the ACP client disconnected")
            except RequestError as exc:  # a client that cannot ask: nothing runs unasked
                raise OIError(f"The step was not run: the ACP client could not ask for "
                              f"approval ({exc}). Use a client that answers "
                              "session/request_permission, or `/auto_run on` to run code "
                              "without asking.") from None
            if request.preview is not None and U.chose_edit(response, U.PREVIEW):
                await request.preview.run(request.block.code)  # then asked again, shown
                call, options = U.permission_request(request, edit=state.can_edit)
                continue
            if not (state.can_edit and U.chose_edit(response)):
                return U.decision_from(response, request)
            decision = await self._edit(request, call.tool_call_id)
            if decision is not None:
                return decision  # else the form was declined: ask again

    async def _edit(self, request: ApprovalRequest, call_id: str) -> Decision | None:
        state = self.state
        message, mode = U.edit_form(request, state.id, call_id)
        try:
            answer = await state.conn.create_elicitation(message=message, mode=mode)
        except ConnectionError:
            return Decision("stop", reason="the ACP client disconnected")
        except RequestError as exc:
            raise OIError(f"The step was not run: the ACP client could not show the edit "
                          f"form ({exc}). Run it as it is, or Skip and say what to change."
                          ) from None
        return U.edit_decision(answer, request)
