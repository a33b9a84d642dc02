"""TurnMemory for the OpenAI Agents SDK: a ``call_model_input_filter`` over Responses input items.

::

    from agents import Agent, RunConfig, Runner
    from turnmemory.integrations.openai_agents import TurnMemoryInputFilter

    config = RunConfig(call_model_input_filter=TurnMemoryInputFilter(workspace="/repo"))
    result = Runner.run_sync(agent, history, run_config=config)

Before every model call the filter replaces each completed turn of the input (everything before the
last user message) by its TurnMemory replay: assistant messages in place, each ``function_call`` with
``{}`` arguments and its ``function_call_output`` carrying the call's status and outcomes. The turn in
progress is sent as it is, so tools run with full fidelity; the run's own items (``result.new_items``,
sessions) keep the full trace. Needs ``pip install 'turnmemory[agents]'``.
"""

from __future__ import annotations

from typing import Any, Unpack, cast

from turnmemory.integrations._adapter import missing_extra

try:
    from agents import TResponseInputItem
    from agents.run_config import CallModelData, ModelInputData
except ImportError as error:  # pragma: no cover - only without the extra
    raise missing_extra("openai_agents", "the OpenAI Agents SDK", "agents", error) from None

from turnmemory.integrations._compact import Compactor, CompactorOptions

__all__ = ["TurnMemoryInputFilter"]


def _plain(item: Any) -> Any:
    """An input item as a plain dict (the SDK passes dicts; a model object is dumped)."""
    dump = getattr(item, "model_dump", None)
    return dump(exclude_unset=True) if callable(dump) else item


class TurnMemoryInputFilter:
    """A ``RunConfig(call_model_input_filter=...)`` that sends completed turns as TurnMemory.

    ``options`` go to its :class:`~turnmemory.integrations.Compactor` (:class:`~turnmemory.integrations.CompactorOptions`).
    Use one per conversation for the incremental path (a shared one is correct, only slower).
    """

    def __init__(self, **options: Unpack[CompactorOptions]) -> None:
        self.compactor = Compactor("openai_responses", **options)

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The model input with every turn before the last user message compacted."""
        items = self.compactor.compact([_plain(item) for item in data.model_data.input])
        return ModelInputData(
            input=cast("list[TResponseInputItem]", items), instructions=data.model_data.instructions
        )
