"""Task scratchpad (seed 004 "task execution memory"): the ReAct steps of one task — thoughts,
actions, observations — live here, apart from the conversation, and are released when the
task ends. Only the user's question and the final answer enter the session.

    with session.task("What is the weather in Paris?") as task:
        task.thought("I should call the weather tool")
        task.action("weather", {"city": "Paris"})
        task.observation("18°C, light rain")
        messages = task.context()          # build_context + the steps so far
        task.finish("18°C and light rain.")
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInputError

if TYPE_CHECKING:
    from .session import Session, SessionUpdate


@dataclass(frozen=True)
class Step:
    kind: str  # thought | action | observation
    content: str

    def as_message(self) -> dict[str, str]:
        if self.kind == "observation":
            return {"role": "user", "content": f"Observation: {self.content}"}
        return {"role": "assistant", "content": f"{self.kind.capitalize()}: {self.content}"}


class TaskScratchpad:
    def __init__(self, session: "Session", question: str):
        if not isinstance(question, str) or not question.strip():
            raise InvalidInputError("a task needs the user's question")
        self.session = session
        self.question = question
        self._steps: list[Step] = []
        self.answer: str | None = None
        self.update: "SessionUpdate | None" = None
        self.closed = False

    # ---- steps -------------------------------------------------------------------------
    def _add(self, kind: str, content: str) -> Step:
        if self.closed:
            raise InvalidInputError("this task has ended; its scratchpad was released")
        step = Step(kind, content)
        self._steps.append(step)
        return step

    def thought(self, text: str) -> Step:
        return self._add("thought", text)

    def action(self, name: str, arguments: dict[str, Any] | str | None = None) -> Step:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
        return self._add("action", f"{name}({args})")

    def observation(self, text: str) -> Step:
        return self._add("observation", text)

    @property
    def steps(self) -> list[Step]:
        return list(self._steps)

    def messages(self) -> list[dict[str, str]]:
        """The steps as chat messages, to follow the question in the model's context."""
        return [s.as_message() for s in self._steps]

    def context(self, *, base_prompt: str | None = None) -> list[dict[str, str]]:
        """The session's context for the question, followed by this task's steps."""
        if self.closed:
            raise InvalidInputError("this task has ended; its scratchpad was released")
        return self.session.build_context(self.question, base_prompt=base_prompt, after=self.messages())

    # ---- ending ------------------------------------------------------------------------
    def finish(self, answer: str) -> "SessionUpdate":
        """Record question and final answer in the session and release the steps."""
        if self.closed:
            raise InvalidInputError("this task has already ended")
        if not isinstance(answer, str):
            raise InvalidInputError("the final answer must be a string")
        first = self.session.add_message("user", self.question)
        second = self.session.add_message("assistant", answer)
        self.update = first if first.notice and not second.notice else second
        self.answer = answer
        self.release()
        return self.update

    def release(self) -> None:
        """End the task without an answer: nothing enters the conversation."""
        self._steps.clear()
        self.closed = True

    def __enter__(self) -> "TaskScratchpad":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.closed:
            self.release()
