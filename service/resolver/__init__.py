"""The reference resolver (resolver-v1.md). The matcher is pure code: it reads identifiers and
normalises reference text (`identifiers`, `normalise`, `parse`), scores catalogue candidates against a
reference (`score`) and decides, with guards for near-duplicate works, one `Decision` per reference
(`match`); `sbmv` re-implements Crossref's search-based matching with validation as the bench's baseline.
The flow selects what is still unresolved and appends one resolution per changed answer (`run`), takes a
person's resolution (`person`), runs a whole-ledger pass as a job and re-resolves after each works ingest
(`jobs`), and shows a resolution with its evidence (`shown`). May import `ledger`, `projections`,
the `service.ledger` facade, `service.children` and the event links of `service.screen`; knows no HTTP
and writes no SQL."""
