"""The plan's report document (what `--report` renders), kept beside its result for the HTML and Markdown exports.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plan") as batch:
        batch.add_column(sa.Column("report_z", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("plan") as batch:
        batch.drop_column("report_z")
