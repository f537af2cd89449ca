"""`pitstop key …`: the master key that encrypts a store's data, and your identity.

The master key lives in the OS keyring (or PITSTOP_KEY); the identity (age or ssh-ed25519) is
what others encrypt shared tasks to. `key init --print` is for machines without a keyring.
"""

from __future__ import annotations

from typing import Any

import click

from tui.cli.base import Context, emit, json_option, pass_ctx


@click.group()
def key() -> None:
    """Create, inspect and back up the master key and your identity (age or ssh-ed25519)."""


@key.command("init")
@click.option(
    "--print",
    "print_only",
    is_flag=True,
    help="Print a new master key and identity as PITSTOP_KEY and PITSTOP_IDENTITY exports.",
)
@json_option
def key_init(print_only: bool, as_json: bool) -> None:
    """Create a master key and your identity and keep them in the OS keyring (or --print them)."""
    from core.security import crypto, identity

    if print_only:
        new_key = crypto.generate_key()
        new_identity = identity.create_identity()
        text = crypto.encode_key(new_key)
        emit(
            as_json,
            {
                "key": text,
                "id": crypto.key_id(new_key),
                "identity": new_identity.secret_text,
                "recipient": new_identity.recipient,
            },
            "\n".join(
                [
                    "# keep both secret and backed up; set them in your shell with: "
                    'eval "$(pitstop key init --print)"',
                    f"export {crypto.KEY_ENV}='{text}'",
                    f"export {identity.IDENTITY_ENV}='{new_identity.secret_text}'",
                    f"# your recipient (public; give it to whoever shares tasks with you): "
                    f"{new_identity.recipient}",
                ]
            ),
        )
        return
    setup = identity.init_keyring()
    lines = [
        f"master key {setup.master_key_id} stored in {setup.backend}; back it up with "
        "`pitstop key export`"
        if setup.master_key_id
        else f"master key: the one already in {setup.backend} is kept",
        f"identity stored in {setup.backend}; your recipient: {setup.recipient}"
        if setup.recipient
        else f"identity: the one already in {setup.backend} is kept (`pitstop key show`)",
    ]
    emit(
        as_json,
        {
            "id": setup.master_key_id,
            "stored_in": setup.backend,
            "recipient": setup.recipient,
        },
        "\n".join(lines),
    )


@key.command("status")
@json_option
@pass_ctx
def key_status(ctx: Context, as_json: bool) -> None:
    """Say where the master key and your identity come from, and whether the key opens this
    store's data."""
    from core.security import crypto, identity

    master = crypto.load_master_key()
    mismatched = ctx.engine().keys.tasks_with_other_master(master)
    try:
        operator = identity.load_identity_or_none()
        identity_text = (
            f"identity {operator.recipient} from {operator.source}"
            if operator
            else f"no identity: {identity.HOW_TO_GET_ONE}"
        )
        identity_json: dict[str, Any] | None = (
            {"recipient": operator.recipient, "source": operator.source, "kind": operator.kind}
            if operator
            else None
        )
    except identity.IdentityError as exc:
        identity_text, identity_json = f"identity unusable: {exc.message}", None
    status = {
        "id": master.id,
        "source": master.source,
        "tasks_under_other_keys": mismatched,
        "identity": identity_json,
    }
    human = f"master key {master.id} from {master.source}"
    if mismatched:
        human += f"; {len(mismatched)} task(s) were encrypted under another key: " + ", ".join(
            mismatched[:5]
        )
    emit(as_json, status, human + "\n" + identity_text)


@key.command("show")
@json_option
def key_show(as_json: bool) -> None:
    """Print your public recipient: what others give to `--recipient` to share tasks with you."""
    from core.security import identity

    operator = identity.load_identity()
    emit(
        as_json,
        {"recipient": operator.recipient, "source": operator.source, "kind": operator.kind},
        operator.recipient,
    )


@key.command("export")
@json_option
def key_export(as_json: bool) -> None:
    """Print the master key (base64) for a backup; keep it somewhere safe."""
    from core.security import crypto

    master = crypto.load_master_key()
    text = crypto.encode_key(master.key)
    emit(as_json, {"key": text, "id": master.id, "source": master.source}, text)
