"""Golden sets: loading, validating and rendering the prompts specmeter measures on.

* :func:`load_workload` reads specmeter's own JSONL or Spec-Bench's ``question.jsonl`` (detected per
  line) and raises :class:`WorkloadError` listing every problem, one ``file:line: field ...`` each.
* :func:`render_prompt` turns a :class:`Prompt` into token ids (chat template when there is one).
* :func:`bundled_prompts` locates the golden sets shipped with the package (``"smoke"``).

Nothing here imports torch or transformers.
"""

from specmeter.workloads.bundled import bundled_prompt_names, bundled_prompts
from specmeter.workloads.loader import (
    DEFAULT_CATEGORY,
    MAX_LISTED_PROBLEMS,
    Message,
    Prompt,
    Workload,
    WorkloadError,
    load_workload,
    load_workloads,
)
from specmeter.workloads.render import (
    PromptTokenizer,
    plain_chat_text,
    render_prompt,
    render_turn,
    turn_id,
    turn_messages,
)
from specmeter.workloads.schema import ROLES, Role

__all__ = [
    "DEFAULT_CATEGORY",
    "MAX_LISTED_PROBLEMS",
    "ROLES",
    "Message",
    "Prompt",
    "PromptTokenizer",
    "Role",
    "Workload",
    "WorkloadError",
    "bundled_prompt_names",
    "bundled_prompts",
    "load_workload",
    "load_workloads",
    "plain_chat_text",
    "render_prompt",
    "render_turn",
    "turn_id",
    "turn_messages",
]
