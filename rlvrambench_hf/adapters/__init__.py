"""The adapters that meet other libraries and dispatch to several task packages, so they sit above them: the
``evaluate`` metric's configs (:mod:`.metric`, one table read by ``metrics/rlvrambench``) and ``compute_metrics``
for ``transformers.Trainer`` (:mod:`.trainer`). They compute no score themselves."""
