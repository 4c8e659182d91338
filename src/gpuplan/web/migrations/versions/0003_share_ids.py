"""Random share ids, private plans and listings read from columns.

A plan's id was the hash of its inputs (anyone who knew the inputs could open it); ids are random now and the
hash moves to `request_key`, which finds a stored plan for the same inputs. Rows stored before keep their id
(it is their request key too). `private` plans are left out of the listings.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plan") as batch:
        batch.add_column(sa.Column("request_key", sa.String(16), nullable=True))
        batch.add_column(sa.Column("private", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute("UPDATE plan SET request_key = id WHERE request_key IS NULL")
    op.create_index("ix_plan_request_key", "plan", ["request_key", "private"])


def downgrade() -> None:
    op.drop_index("ix_plan_request_key", "plan")
    with op.batch_alter_table("plan") as batch:
        batch.drop_column("private")
        batch.drop_column("request_key")
