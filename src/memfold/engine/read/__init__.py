"""The read path: ``read.Retriever`` (hybrid vector + keyword search, fusion, filters), its
ranking signals (``rank_*``, ``relevance``), the turn bookkeeping of results (``turns``), the
namespace scope of a search (``search_scope``) and the usage record of searches (``usage``)."""
