"""The long session of the demo corpus: a payment-provider migration over many steps.
Written for Memoir's demo (no real user's data)."""

from __future__ import annotations

from datetime import UTC, datetime

from memoir.demo.builders import ClaudeWriter, tool_use_block

__all__ = ["stripe_migration"]

_STEPS = [
    (
        "Start with the gateway port.",
        "PaymentGateway",
        "shop/payments/port.py",
        "I added a `PaymentGateway` protocol with `authorize`, `capture` and `refund`, and an "
        "adapter for the current Charges code so nothing changes yet.",
    ),
    (
        "Now the PaymentIntents adapter.",
        "PaymentIntentsGateway",
        "shop/payments/intents.py",
        "The new adapter creates a PaymentIntent with `capture_method=manual` and stores the "
        "intent id on the order; capture calls `PaymentIntent.capture`.",
    ),
    (
        "What about 3-D Secure?",
        "requires_action",
        "shop/payments/intents.py",
        "When the intent status is `requires_action` we return the `client_secret` to the "
        "browser, which runs `stripe.handleCardAction`; the order waits in `AWAITING_SCA`.",
    ),
    (
        "Move the webhooks.",
        "payment_intent.succeeded",
        "shop/webhooks.py",
        "The webhook handler now accepts `payment_intent.succeeded` and "
        "`payment_intent.payment_failed`, verifies the signature with the new endpoint secret "
        "and is idempotent on the event id.",
    ),
    (
        "Refunds still use charge ids.",
        "Refund.create",
        "shop/payments/intents.py",
        "Refunds now pass `payment_intent=` instead of `charge=`; Stripe resolves the latest "
        "charge of the intent for us.",
    ),
    (
        "Backfill the old orders.",
        "backfill_intents",
        "scripts/backfill_intents.py",
        "The backfill script pages through orders with a `charge_id` and no `intent_id`, looks "
        "up `charge.payment_intent` and writes it back in batches of 500 with a resume cursor.",
    ),
    (
        "Put it behind a flag.",
        "PAYMENTS_USE_INTENTS",
        "shop/settings.py",
        "`PAYMENTS_USE_INTENTS` selects the adapter per request; it defaults to off in "
        "production and on in staging.",
    ),
    (
        "Run the whole payments suite.",
        "pytest",
        "tests/payments",
        "All 64 payment tests pass against stripe-mock, including the SCA and webhook cases.",
    ),
]


def stripe_migration() -> ClaudeWriter:
    """The long session: a payment-provider migration over many steps."""
    w = ClaudeWriter(
        "8d0e6b2f-1c3a-4f5e-8a9b-7c6d5e4f3a02",
        cwd="/home/ann/code/webshop",
        start=datetime(2025, 10, 16, 8, 30, tzinfo=UTC),
        step_s=45,
    )
    w.user(
        "We need to migrate payments from the Stripe Charges API to PaymentIntents before "
        "the deprecation. Plan it with me step by step."
    )
    w.assistant(
        "Here is the plan: 1) wrap the client behind a `PaymentGateway` port, 2) add "
        "PaymentIntents with automatic confirmation, 3) handle 3-D Secure "
        "`requires_action`, 4) migrate webhooks from `charge.succeeded` to "
        "`payment_intent.succeeded`, 5) backfill stored charge ids, 6) remove the old "
        "path behind a feature flag."
    )
    for n, (ask, topic, path, answer) in enumerate(_STEPS, start=1):
        w.user(ask)
        call = f"toolu_02St{n:02d}"
        tool = "Bash" if topic == "pytest" else "Edit"
        tool_input = (
            {"command": f"pytest {path} -q"}
            if tool == "Bash"
            else {"file_path": path, "old_string": "...", "new_string": f"# {topic}"}
        )
        w.assistant(f"Working on `{topic}` in `{path}`.", tool_use_block(call, tool, tool_input))
        w.tool(
            call, "64 passed in 3.20s" if tool == "Bash" else f"The file {path} has been updated."
        )
        w.assistant(answer)
        for k in range(2):
            w.user(f"Follow-up {k + 1} on step {n}: any edge cases for `{topic}`?")
            w.assistant(
                f"For `{topic}`: retries must reuse the same idempotency key "
                f"(order id + step {n}), and a timeout is treated as unknown, never as "
                "failed — we poll the intent before telling the customer anything."
            )
        w.snapshot()
    w.summary("Stripe Charges → PaymentIntents migration with SCA, webhooks and backfill")
    return w
