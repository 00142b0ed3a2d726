"""Adapters for the agent frameworks people build with, each behind its own extra:

- :mod:`memoir.integrations.openai_agents` (``[openai-agents]``): a ``Session`` of the
  OpenAI Agents SDK kept in Memoir's event log, compacted past a budget, with a ``recall``
  tool over long-term memory.
- :mod:`memoir.integrations.pydantic_ai` (``[pydantic-ai]``): a history processor that
  compacts a pydantic-ai agent's messages with Memoir's compactor before each model call.
- :mod:`memoir.integrations.langgraph` (``[langgraph]``): LangGraph's ``BaseStore`` over
  keyed memories (JSON values of one user under a namespace and a key).

They are adapters, like the CLI and the HTTP server: they use the public async face
(:class:`memoir.AsyncMemoir`) and never the store. ``import memoir`` imports none of them;
importing one without its framework raises ``ImportError`` naming the extra to install.
"""
