"""The reference resolver's matcher (resolver-v1.md): pure code that reads identifiers and normalises
reference text (`identifiers`, `normalise`, `parse`), scores catalogue candidates against a reference
(`score`), and decides, with guards for near-duplicate works, one `Decision` per reference (`match`);
`sbmv` re-implements Crossref's search-based matching with validation as the baseline the bench compares
against. May import `ledger.model` and the protocols of `ledger.storage.interface` (candidates come
through `CatalogueTables`, in batches); knows no HTTP and no SQL."""
