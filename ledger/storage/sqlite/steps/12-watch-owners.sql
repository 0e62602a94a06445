-- Step 12, watch owners (service/alerts.py): the sha256 of the token that made a watch, as the token file
-- holds it, never the token. NULL is the operator's: watches made with the CLI or before this step.

    ALTER TABLE watches ADD COLUMN owner TEXT;
    CREATE INDEX watches_by_owner ON watches (owner, id) WHERE removed_at IS NULL;
    