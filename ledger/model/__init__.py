"""The model: events as frozen tagged Structs, their canonical encoding (the bytes that are hashed),
the type of a JSON value, the strict I-JSON parser, the read buffer of the pull JSON readers, instants,
ids and DOIs as people paste them, the record's types and its decomposition into events.
May import nothing of the project beyond this room."""
