"""`pitstop key …`: the master key that encrypts a store's data, your identity and signing key.

The master key lives in the OS keyring (or PITSTOP_KEY); the identity (age or ssh-ed25519) is
what others encrypt shared tasks to; the signing key (Ed25519) is what a task's roster admits
you by, and what every fact you write is signed with. `key init --print` is for machines
without a keyring. `key show` prints the public halves and the fingerprint people compare by
voice, because a key pasted over chat is only as good as the check that it arrived unchanged.
"""

from __future__ import annotations

from typing import Any

import click

from tui.cli.base import Context, emit, json_option, pass_ctx


@click.group()
def key() -> None:
    """Create, inspect and back up the master key, your identity and your signing key."""


@key.command("init")
@click.option(
    "--print",
    "print_only",
    is_flag=True,
    help="Print a new master key, identity and signing key as PITSTOP_KEY, PITSTOP_IDENTITY "
    "and PITSTOP_SIGNING_KEY exports.",
)
@click.option(
    "--new",
    "force_new",
    is_flag=True,
    help="Make a new master key even though this store's data depends on another one.",
)
@json_option
@pass_ctx
def key_init(ctx: Context, print_only: bool, force_new: bool, as_json: bool) -> None:
    """Create a master key, your identity and your signing key and keep them in the OS keyring
    (or --print them); what is there already is kept, and a store whose data depends on a key
    refuses a new one."""
    if not force_new:
        _refuse_orphaning_the_store(ctx, print_only)
    if print_only:
        _print_new_secrets(as_json)
        return
    from core.security import identity, signing

    # Whatever signing key is in force now (an env var, the keyring, or one derived from an
    # identity) stays in force: a new one would make this operator a stranger to every roster
    # that names the old one.
    before = signing.load_signing_key_or_none()
    setup = identity.init_keyring()
    signer: signing.SigningKey | None = None
    if before is None:
        signer = signing.create_signing_key()
        signing.store_signing_key_in_keyring(signer)
    lines = [
        f"master key {setup.master_key_id} stored in {setup.backend}; back it up with "
        "`pitstop key export`"
        if setup.master_key_id
        else f"master key: the one already in {setup.backend} is kept",
        f"identity stored in {setup.backend}; your recipient: {setup.recipient}"
        if setup.recipient
        else f"identity: the one already in {setup.backend} is kept (`pitstop key show`)",
        f"signing key stored in {setup.backend}; your fingerprint: {signer.fingerprint}"
        if signer
        else f"signing key: yours is kept ({before.source if before else 'none'})",
    ]
    kept = signer or before
    emit(
        as_json,
        {
            "id": setup.master_key_id,
            "stored_in": setup.backend,
            "recipient": setup.recipient,
            "signer": signer.public if signer else None,
            "fingerprint": kept.fingerprint if kept else None,
        },
        "\n".join(lines),
    )


def _refuse_orphaning_the_store(ctx: Context, print_only: bool) -> None:
    """Stop before a new master key leaves the store's encrypted data unreadable."""
    from core.errors import ConflictError
    from core.paths import StorePaths, resolve_store_root
    from core.security import crypto

    if not StorePaths(resolve_store_root(ctx.store)).database.exists():
        return  # no store yet (and none is made by asking)
    if not print_only:
        try:
            crypto.load_master_key()
            return  # the keyring (or PITSTOP_KEY) has one: `key init` keeps it
        except crypto.MasterKeyError:
            pass
    why = ctx.engine().keys.why_not_a_new_master()
    if why is not None:
        raise ConflictError(why)


def _print_new_secrets(as_json: bool) -> None:
    from core.security import crypto, identity, signing

    new_key = crypto.generate_key()
    new_identity = identity.create_identity()
    new_signer = signing.create_signing_key()
    text = crypto.encode_key(new_key)
    emit(
        as_json,
        {
            "key": text,
            "id": crypto.key_id(new_key),
            "identity": new_identity.secret_text,
            "recipient": new_identity.recipient,
            "signing_key": new_signer.secret_text,
            "signer": new_signer.public,
            "fingerprint": new_signer.fingerprint,
        },
        "\n".join(
            [
                "# keep all three secret and backed up; set them once with "
                'eval "$(pitstop key init --print)", then keep these export lines (a password '
                "manager, your shell profile): a second run makes a different key",
                f"export {crypto.KEY_ENV}='{text}'",
                f"export {identity.IDENTITY_ENV}='{new_identity.secret_text}'",
                f"export {signing.SIGNING_ENV}='{new_signer.secret_text}'",
                f"# your recipient (public; give it to whoever shares tasks with you): "
                f"{new_identity.recipient}",
                f"# your signing key (public): {new_signer.public}",
                f"# your fingerprint (compare it by voice): {new_signer.fingerprint}",
            ]
        ),
    )
    # On stderr: `eval "$(…)"` swallows stdout's comments, and this is the one line that must
    # be read. Nothing else keeps these secrets.
    click.echo(
        f"pitstop: new master key {crypto.key_id(new_key)}: save the three exports now (a "
        "password manager); nothing else keeps them, and without the key what it encrypts "
        "cannot be read. Run this once, not in every shell: the next run makes another key.",
        err=True,
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
    """Print your public recipient, your public signing key and its fingerprint, and the line
    an owner runs to share a task with you."""
    from tui.cli.key_text import public_halves, show_lines

    document = public_halves()
    emit(as_json, document, lambda: "\n".join(show_lines(document)))


@key.command("export")
@json_option
def key_export(as_json: bool) -> None:
    """Print the master key (base64) for a backup; keep it somewhere safe."""
    from core.security import crypto

    master = crypto.load_master_key()
    text = crypto.encode_key(master.key)
    emit(as_json, {"key": text, "id": master.id, "source": master.source}, text)
