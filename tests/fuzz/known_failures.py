# ruff: noqa: E501  (each reason is the error message as it was met, kept on one line)
"""Raw errors the fuzz harness finds in modules this part of the code does not own, left to their owners.

Each is run as an ``xfail(strict=True)``: when its module is fixed the case passes, the xfail fails, and the
entry is removed here. The reason is the first raw error the harness met: its type, where it was raised and
its message; the test's output shows the input.
"""

from __future__ import annotations

KNOWN_FAILURES: dict[str, str] = {
    "uncertank.EnsembleRanker": (
        "uncertank.adapters: TypeError from an operation, not a raise, at uncertank/adapters.py:95: TypeError: 'float' object is not iterable"
    ),
    "uncertank.FolderInUseError": (
        "uncertank._folders: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.experiment.BayesConfig": (
        "uncertank.experiment.config: ValidationError from a dependency at inside pydantic ValidationError: 9 validation errors for BayesConfig"
    ),
    "uncertank.experiment.ConditionConfig": (
        "uncertank.experiment.config: ValidationError from a dependency at inside pydantic ValidationError: 1 validation error for ConditionConfig"
    ),
    "uncertank.experiment.ConformalConfig": (
        "uncertank.experiment.config: ValidationError from a dependency at inside pydantic ValidationError: 5 validation errors for ConformalConfig"
    ),
    "uncertank.experiment.ExternalRunConfig": (
        "uncertank.experiment.config: ValidationError from a dependency at inside pydantic ValidationError: 2 validation errors for ExternalRunConfig"
    ),
    "uncertank.experiment.RankerConfig": (
        "uncertank.experiment.config: ValidationError from a dependency at inside pydantic ValidationError: 3 validation errors for RankerConfig"
    ),
    "uncertank.experiment.ReportConfig": (
        "uncertank.experiment.config: ValidationError from a dependency at inside pydantic ValidationError: 2 validation errors for ReportConfig"
    ),
    "uncertank.experiment.StudyConfig": (
        "uncertank.experiment.config: ValidationError from a dependency at inside pydantic ValidationError: 3 validation errors for StudyConfig"
    ),
    "uncertank.experiment.StudyConfigError": (
        "uncertank.experiment.config: TypeError from an operation, not a raise, at uncertank/experiment/config.py:100: TypeError: 'float' object is not iterable"
    ),
    "uncertank.experiment.analysis.best_rankers": (
        "uncertank.experiment.analysis: AttributeError raised at uncertank/experiment/analysis.py:108: AttributeError: 'float' object has no attribute 'metric_info'"
    ),
    "uncertank.experiment.analysis.compare_to_reference": (
        "uncertank.experiment.analysis: AttributeError raised at uncertank/experiment/analysis.py:72: AttributeError: 'float' object has no attribute 'rankers'"
    ),
    "uncertank.experiment.analysis.higher_is_better": (
        "uncertank.experiment.analysis: AttributeError raised at uncertank/experiment/analysis.py:108: AttributeError: 'float' object has no attribute 'metric_info'"
    ),
    "uncertank.experiment.analysis.measured_labels": (
        "uncertank.experiment.analysis: AttributeError raised at uncertank/experiment/analysis.py:91: AttributeError: 'float' object has no attribute 'metric_info'"
    ),
    "uncertank.experiment.analysis.metric_labels": (
        "uncertank.experiment.analysis: AttributeError raised at uncertank/experiment/analysis.py:91: AttributeError: 'float' object has no attribute 'metric_info'"
    ),
    "uncertank.experiment.analysis.reference_ranker": (
        "uncertank.experiment.analysis: AttributeError raised at uncertank/experiment/analysis.py:72: AttributeError: 'float' object has no attribute 'rankers'"
    ),
    "uncertank.experiment.analysis.relative_change": (
        "uncertank.experiment.analysis: TypeError from an operation, not a raise, at uncertank/experiment/analysis.py:123: TypeError: only 0-dimensional arrays can be converted to "
    ),
    "uncertank.experiment.analysis.significance": (
        "uncertank.experiment.analysis: AttributeError raised at uncertank/experiment/analysis.py:72: AttributeError: 'float' object has no attribute 'rankers'"
    ),
    "uncertank.experiment.building.build_ranker": (
        "uncertank.experiment.building: AttributeError raised at uncertank/experiment/building.py:60: AttributeError: 'float' object has no attribute 'pretrained'"
    ),
    "uncertank.experiment.building.load_ranker": (
        "uncertank.experiment.building: AttributeError raised at uncertank/experiment/building.py:74: AttributeError: 'numpy.ndarray' object has no attribute 'saveable'"
    ),
    "uncertank.experiment.building.quiet_params": (
        "uncertank.experiment.building: TypeError from an operation, not a raise, at uncertank/experiment/building.py:39: TypeError: argument of type 'float' is not iterable"
    ),
    "uncertank.experiment.building.warm_start": (
        "uncertank.experiment.building: AttributeError raised at uncertank/experiment/building.py:96: AttributeError: 'float' object has no attribute 'init_from'"
    ),
    "uncertank.experiment.decisions.decide": (
        "uncertank.experiment.decisions: AttributeError raised at uncertank/experiment/decisions.py:92: AttributeError: 'float' object has no attribute 'conditions'"
    ),
    "uncertank.experiment.decisions.with_decisions": (
        "uncertank.experiment.decisions: TypeError from an operation, not a raise, at uncertank/experiment/decisions.py:161: TypeError: 'float' object is not iterable"
    ),
    "uncertank.experiment.external.check_run_files": (
        "uncertank.experiment.external: AttributeError raised at uncertank/experiment/external.py:108: AttributeError: 'float' object has no attribute 'bayes'"
    ),
    "uncertank.experiment.external.match_runs": (
        "uncertank.experiment.external: AttributeError raised at uncertank/experiment/external.py:204: AttributeError: 'float' object has no attribute 'bayes'"
    ),
    "uncertank.experiment.external.score_runs": (
        "uncertank.experiment.external: AttributeError raised at uncertank/experiment/systems.py:107: AttributeError: 'float' object has no attribute 'metric_entries'"
    ),
    "uncertank.experiment.guarantees.guarantees": (
        "uncertank.experiment.guarantees: AttributeError raised at uncertank/experiment/guarantees.py:182: AttributeError: 'float' object has no attribute 'conformal'"
    ),
    "uncertank.experiment.guarantees.score_features": (
        "uncertank.experiment.guarantees: AttributeError raised at uncertank/experiment/guarantees.py:95: AttributeError: 'numpy.ndarray' object has no attribute 'scores'"
    ),
    "uncertank.experiment.guarantees.with_guarantees": (
        "uncertank.experiment.guarantees: TypeError from an operation, not a raise, at uncertank/experiment/guarantees.py:260: TypeError: 'float' object is not iterable"
    ),
    "uncertank.experiment.load_config": (
        "uncertank.experiment.config: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.experiment.report.chance.base_rate_sentence": (
        "uncertank.experiment.report.chance: AttributeError raised at uncertank/experiment/report/chance.py:61: AttributeError: 'float' object has no attribute 'config'"
    ),
    "uncertank.experiment.report.chance.chance_level": (
        "uncertank.experiment.report.chance: AttributeError raised at uncertank/experiment/report/chance.py:61: AttributeError: 'float' object has no attribute 'config'"
    ),
    "uncertank.experiment.report.chance.set_aside": (
        "uncertank.experiment.report.chance: AttributeError raised at uncertank/experiment/report/chance.py:61: AttributeError: 'float' object has no attribute 'config'"
    ),
    "uncertank.experiment.report.document.render_html": (
        "uncertank.experiment.report.document: AttributeError raised at uncertank/experiment/report/document.py:189: AttributeError: 'float' object has no attribute 'blocks'"
    ),
    "uncertank.experiment.report.document.render_markdown": (
        "uncertank.experiment.report.document: AttributeError raised at uncertank/experiment/report/document.py:115: AttributeError: 'float' object has no attribute 'blocks'"
    ),
    "uncertank.experiment.report.figures.Figures": (
        "uncertank.experiment.report.figures: TypeError from an operation, not a raise, at uncertank/experiment/report/figures.py:57: TypeError: 'float' object is not iterable"
    ),
    "uncertank.experiment.report.glossary.define": (
        "uncertank.experiment.report.glossary: AttributeError raised at uncertank/experiment/report/glossary.py:89: AttributeError: 'float' object has no attribute 'metric_info'"
    ),
    "uncertank.experiment.report.guarantee_section.thresholds": (
        "uncertank.experiment.report.guarantee_section: AttributeError raised at uncertank/experiment/report/sections.py:73: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.markdown_table": (
        "uncertank.experiment.report.markdown: TypeError from an operation, not a raise, at uncertank/experiment/report/markdown.py:38: TypeError: 'float' object is not iterable"
    ),
    "uncertank.experiment.report.outcomes.bayes": (
        "uncertank.experiment.report.outcomes: AttributeError raised at uncertank/experiment/report/outcomes.py:225: AttributeError: 'float' object has no attribute 'bayes'"
    ),
    "uncertank.experiment.report.outcomes.imbalance": (
        "uncertank.experiment.report.outcomes: AttributeError raised at uncertank/experiment/report/sections.py:73: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.outcomes.nota": (
        "uncertank.experiment.report.outcomes: AttributeError raised at uncertank/experiment/report/sections.py:73: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.outcomes.reliability": (
        "uncertank.experiment.report.outcomes: AttributeError raised at uncertank/experiment/report/sections.py:73: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.outcomes.risk": (
        "uncertank.experiment.report.outcomes: AttributeError raised at uncertank/experiment/report/sections.py:73: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.outcomes.run_warnings": (
        "uncertank.experiment.report.outcomes: AttributeError raised at uncertank/experiment/report/outcomes.py:401: AttributeError: 'float' object has no attribute 'warnings'"
    ),
    "uncertank.experiment.report.outcomes.selective": (
        "uncertank.experiment.report.outcomes: AttributeError raised at uncertank/experiment/report/sections.py:73: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.outcomes.timings": (
        "uncertank.experiment.report.outcomes: AttributeError raised at uncertank/experiment/report/outcomes.py:383: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.render_report": (
        "uncertank.experiment.report: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not ndarray"
    ),
    "uncertank.experiment.report.sections.calibration_detail": (
        "uncertank.experiment.report.sections: AttributeError raised at uncertank/experiment/report/sections.py:73: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.sections.comparisons": (
        "uncertank.experiment.report.sections: AttributeError raised at uncertank/experiment/report/sections.py:63: AttributeError: 'float' object has no attribute 'significance'"
    ),
    "uncertank.experiment.report.sections.conditions_of": (
        "uncertank.experiment.report.sections: AttributeError raised at uncertank/experiment/report/sections.py:82: AttributeError: 'float' object has no attribute 'conditions'"
    ),
    "uncertank.experiment.report.sections.header": (
        "uncertank.experiment.report.sections: AttributeError raised at uncertank/experiment/report/sections.py:116: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.sections.in_domain": (
        "uncertank.experiment.report.sections: AttributeError raised at uncertank/experiment/report/sections.py:366: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.sections.open_section": (
        "uncertank.experiment.report.sections: AttributeError raised at uncertank/experiment/report/sections.py:73: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.sections.recalibration": (
        "uncertank.experiment.report.sections: AttributeError raised at uncertank/experiment/report/sections.py:73: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.sections.shifted": (
        "uncertank.experiment.report.sections: AttributeError raised at uncertank/experiment/report/sections.py:380: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.table_section.paper_table": (
        "uncertank.experiment.report.table_section: AttributeError raised at uncertank/experiment/report/table_section.py:83: AttributeError: 'float' object has no attribute 'heading'"
    ),
    "uncertank.experiment.report.table_section.table_report": (
        "uncertank.experiment.report.table_section: AttributeError raised at uncertank/experiment/report/table_section.py:33: AttributeError: 'float' object has no attribute 'paper_table'"
    ),
    "uncertank.experiment.result.ResultsFileError": (
        "uncertank.experiment.result: TypeError from an operation, not a raise, at uncertank/experiment/result.py:782: TypeError: 'float' object is not iterable"
    ),
    "uncertank.experiment.runner.fit_key": (
        "uncertank.experiment.runner: AttributeError raised at uncertank/experiment/runner.py:190: AttributeError: 'float' object has no attribute 'checkpoint'"
    ),
    "uncertank.experiment.runner.fit_rankers": (
        "uncertank.experiment.runner: AttributeError raised at uncertank/experiment/runner.py:427: AttributeError: 'float' object has no attribute 'rankers'"
    ),
    "uncertank.experiment.runner.load_data": (
        "uncertank.experiment.runner: AttributeError raised at uncertank/experiment/runner.py:151: AttributeError: 'float' object has no attribute 'train_dataset'"
    ),
    "uncertank.experiment.runner.measure": (
        "uncertank.experiment.runner: AttributeError raised at uncertank/experiment/runner.py:683: AttributeError: 'float' object has no attribute 'metric_entries'"
    ),
    "uncertank.experiment.runner.predict_all": (
        "uncertank.experiment.runner: AttributeError raised at uncertank/experiment/runner.py:606: AttributeError: 'QuerySet' object has no attribute 'valid'"
    ),
    "uncertank.experiment.runner.unfitted_key": (
        "uncertank.experiment.runner: AttributeError raised at uncertank/experiment/runner.py:393: AttributeError: 'float' object has no attribute 'name'"
    ),
    "uncertank.experiment.speed.ProbeTimes": (
        "uncertank.experiment.speed: TypeError from an operation, not a raise, at uncertank/experiment/speed.py:56: TypeError: 'Predictions' object is not iterable"
    ),
    "uncertank.experiment.speed.machine_speed": (
        "uncertank.experiment.speed: AttributeError raised at uncertank/experiment/speed.py:143: AttributeError: 'float' object has no attribute 'train'"
    ),
    "uncertank.experiment.stages.file_stem": (
        "uncertank.experiment.stages: AttributeError raised at uncertank/experiment/stages.py:64: AttributeError: 'numpy.float64' object has no attribute 'isalnum'"
    ),
    "uncertank.experiment.systems.bayes_metric": (
        "uncertank.experiment.systems: AttributeError raised at uncertank/experiment/systems.py:107: AttributeError: 'float' object has no attribute 'metric_entries'"
    ),
    "uncertank.experiment.systems.compare_systems": (
        "uncertank.experiment.systems: AttributeError raised at uncertank/experiment/systems.py:175: AttributeError: 'float' object has no attribute 'bayes'"
    ),
    "uncertank.experiment.table.calibration_columns": (
        "uncertank.experiment.table: AttributeError raised at uncertank/experiment/table.py:47: AttributeError: 'str' object has no attribute 'kind'"
    ),
    "uncertank.experiment.table.paper_table": (
        "uncertank.experiment.table: AttributeError raised at uncertank/experiment/table.py:94: AttributeError: 'float' object has no attribute 'conditions'"
    ),
    "uncertank.experiment.table.study_paper_table": (
        "uncertank.experiment.table: AttributeError raised at uncertank/experiment/table.py:144: AttributeError: 'float' object has no attribute 'conditions'"
    ),
    "uncertank.formatting.format_fixed": (
        "uncertank.formatting: ValueError from an operation, not a raise, at uncertank/formatting.py:113: ValueError: Invalid format specifier '.0.5f' for object of type '"
    ),
    "uncertank.formatting.format_percent": (
        "uncertank.formatting: TypeError from an operation, not a raise, at uncertank/formatting.py:102: TypeError: unsupported format string passed to numpy.ndarray.__for"
    ),
    "uncertank.formatting.format_pvalue": (
        "uncertank.formatting: TypeError from an operation, not a raise, at uncertank/formatting.py:74: TypeError: only 0-dimensional arrays can be converted to Python sca"
    ),
    "uncertank.formatting.format_signed": (
        "uncertank.formatting: TypeError from an operation, not a raise, at uncertank/formatting.py:61: TypeError: only 0-dimensional arrays can be converted to Python sca"
    ),
    "uncertank.get_plugin_manager": (
        "uncertank.plugins: ValueError from an operation, not a raise, at uncertank/plugins.py:507: ValueError: The truth value of an array with more than one element i"
    ),
    "uncertank.hookimpl": (
        "pluggy._decorators: AttributeError raised at inside pluggy AttributeError: 'numpy.ndarray' object has no attribute 'uncertank_impl'"
    ),
    "uncertank.hookspecs.hookspec": (
        "pluggy._decorators: AttributeError raised at inside pluggy AttributeError: 'numpy.ndarray' object has no attribute 'uncertank_spec'"
    ),
    "uncertank.hookspecs.uncertank_datasets": (
        "uncertank.hookspecs: NotImplementedError raised at uncertank/hookspecs.py:78: NotImplementedError: "
    ),
    "uncertank.hookspecs.uncertank_metrics": (
        "uncertank.hookspecs: NotImplementedError raised at uncertank/hookspecs.py:128: NotImplementedError: "
    ),
    "uncertank.hookspecs.uncertank_negative_samplers": (
        "uncertank.hookspecs: NotImplementedError raised at uncertank/hookspecs.py:91: NotImplementedError: "
    ),
    "uncertank.hookspecs.uncertank_rankers": (
        "uncertank.hookspecs: NotImplementedError raised at uncertank/hookspecs.py:62: NotImplementedError: "
    ),
    "uncertank.hookspecs.uncertank_recalibrators": (
        "uncertank.hookspecs: NotImplementedError raised at uncertank/hookspecs.py:107: NotImplementedError: "
    ),
    "uncertank.list_plugins": (
        "uncertank.plugins: ValueError from an operation, not a raise, at uncertank/plugins.py:287: ValueError: The truth value of an array with more than one element i"
    ),
    "uncertank.make_ranker": (
        "uncertank.plugins: TypeError from an operation, not a raise, at uncertank/plugins.py:388: TypeError: unhashable type: 'numpy.ndarray'"
    ),
    "uncertank.metrics.ECEAccumulator": (
        "uncertank.metrics.accumulators: ValueError from an operation, not a raise, at uncertank/metrics/accumulators.py:222: ValueError: The truth value of an array with more than "
    ),
    "uncertank.metrics.Measure": (
        "uncertank.metrics.measures: ValueError from an operation, not a raise, at uncertank/metrics/measures.py:208: ValueError: The truth value of an array with more than one "
    ),
    "uncertank.metrics.PerQueryMean": (
        "uncertank.metrics.accumulators: AttributeError raised at uncertank/metrics/accumulators.py:191: AttributeError: 'str' object has no attribute 'per_query'"
    ),
    "uncertank.metrics.binning.bin_index": (
        "uncertank.metrics.binning: ValueError from an operation, not a raise, at uncertank/metrics/binning.py:187: ValueError: The truth value of an array with more than one e"
    ),
    "uncertank.metrics.binning.bin_stats": (
        "uncertank.metrics.binning: ValueError from an operation, not a raise, at uncertank/metrics/binning.py:187: ValueError: The truth value of an array with more than one e"
    ),
    "uncertank.metrics.binning.ece_from_stats": (
        "uncertank.metrics.binning: AttributeError raised at uncertank/metrics/binning.py:218: AttributeError: 'float' object has no attribute 'sum_conf'"
    ),
    "uncertank.metrics.binning.uniform_bin_index": (
        "uncertank.metrics.binning: AttributeError raised at uncertank/metrics/binning.py:146: AttributeError: 'float' object has no attribute 'size'"
    ),
    "uncertank.metrics.binning.uniform_edges": (
        "uncertank.metrics.binning: TypeError from an operation, not a raise, at uncertank/metrics/binning.py:125: TypeError: only 0-dimensional arrays can be converted to Pyth"
    ),
    "uncertank.metrics.evaluate_stream": (
        "uncertank.metrics.streaming: TypeError from an operation, not a raise, at uncertank/metrics/streaming.py:43: TypeError: 'NoneType' object is not iterable"
    ),
    "uncertank.metrics.measure_id": (
        "uncertank.metrics.measures: TypeError from an operation, not a raise, at uncertank/metrics/measures.py:343: TypeError: unhashable type: 'numpy.ndarray'"
    ),
    "uncertank.metrics.measures.function_measure_id": (
        "uncertank.metrics.measures: AttributeError raised at uncertank/metrics/measures.py:614: AttributeError: 'float' object has no attribute 'items'"
    ),
    "uncertank.metrics.quantiles.combine_pass": (
        "uncertank.metrics.quantiles: ValueError from an operation, not a raise, at uncertank/metrics/quantiles.py:68: ValueError: zero-dimensional arrays cannot be concatenated"
    ),
    "uncertank.metrics.quantiles.exact_quantiles": (
        "uncertank.metrics.quantiles: TypeError from an operation, not a raise, at uncertank/metrics/quantiles.py:90: TypeError: 'RankedLists' object is not callable"
    ),
    "uncertank.metrics.quantiles.float_bits": (
        "uncertank.metrics.quantiles: TypeError from an operation, not a raise, at uncertank/metrics/quantiles.py:46: TypeError: can only concatenate str (not 'float') to str"
    ),
    "uncertank.metrics.quantiles.select_pass": (
        "uncertank.metrics.quantiles: TypeError from an operation, not a raise, at uncertank/metrics/quantiles.py:53: TypeError: ufunc 'right_shift' not supported for the input t"
    ),
    "uncertank.metrics.ranks.pair_ranks": (
        "uncertank.metrics.ranks: AttributeError raised at uncertank/metrics/ranks.py:197: AttributeError: 'RankedLists' object has no attribute 'as_block'"
    ),
    "uncertank.metrics.ranks.relevant_ranks": (
        "uncertank.metrics.ranks: AttributeError raised at uncertank/metrics/ranks.py:86: AttributeError: 'RankedLists' object has no attribute 'as_block'"
    ),
    "uncertank.metrics.resolve_metrics": (
        "uncertank.metrics.metric: TypeError from an operation, not a raise, at uncertank/metrics/metric.py:445: TypeError: 'float' object is not iterable"
    ),
    "uncertank.nn.CrossEncoderModel": (
        "uncertank.nn.model: AttributeError raised at uncertank/nn/model.py:190: AttributeError: 'float' object has no attribute 'config'"
    ),
    "uncertank.nn.NeuralRanker": (
        "uncertank.nn.ranker: ValueError from an operation, not a raise, at uncertank/nn/pretrained.py:537: ValueError: The truth value of an array with more than one ele"
    ),
    "uncertank.nn.PretrainedCrossEncoder": (
        "uncertank.nn.pretrained: ValueError from an operation, not a raise, at uncertank/nn/pretrained.py:352: ValueError: The truth value of an array with more than one ele"
    ),
    "uncertank.nn.add_separator_tokens": (
        "uncertank.nn.inputs: AttributeError raised at uncertank/nn/inputs.py:71: AttributeError: 'float' object has no attribute 'get_vocab'"
    ),
    "uncertank.nn.autocast": (
        "uncertank.nn.runtime: AttributeError raised at uncertank/nn/runtime.py:100: AttributeError: 'QuerySet' object has no attribute 'type'"
    ),
    "uncertank.nn.balanced_pairs": (
        "uncertank.nn.training: ValueError from a dependency at numpy/random/bit_generator.pyx:69: ValueError: expected non-negative integer"
    ),
    "uncertank.nn.build_backbone": (
        "uncertank.nn.model: OSError from a dependency at inside transformers OSError: It looks like the config file at 'tests/data/edge-a.run' is not a valid JSON file."
    ),
    "uncertank.nn.check_active_dropout": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:94: AttributeError: 'str' object has no attribute 'modules'"
    ),
    "uncertank.nn.checkpoint.load_weights": (
        "uncertank.nn.checkpoint: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not NoneType"
    ),
    "uncertank.nn.classifier_activation": (
        "uncertank.nn.pretrained: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.nn.cross_entropy_loss": (
        "uncertank.nn.training: AttributeError raised at uncertank/nn/training.py:312: AttributeError: 'PosixPath' object has no attribute 'float'"
    ),
    "uncertank.nn.dropout_owners": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:68: AttributeError: 'str' object has no attribute 'modules'"
    ),
    "uncertank.nn.dropout_rates": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:94: AttributeError: 'str' object has no attribute 'modules'"
    ),
    "uncertank.nn.encode_pairs": (
        "uncertank.nn.inputs: AttributeError raised at uncertank/nn/inputs.py:203: AttributeError: 'float' object has no attribute 'get_vocab'"
    ),
    "uncertank.nn.encode_queries": (
        "uncertank.nn.inputs: AttributeError raised at uncertank/nn/inputs.py:203: AttributeError: 'float' object has no attribute 'get_vocab'"
    ),
    "uncertank.nn.encode_text_pairs": (
        "uncertank.nn.pretrained: AttributeError raised at uncertank/nn/pretrained.py:203: AttributeError: 'float' object has no attribute 'turn_markers'"
    ),
    "uncertank.nn.fast_path_problem": (
        "uncertank.nn.dropout: AttributeError raised at uncertank/nn/dropout.py:281: AttributeError: 'str' object has no attribute 'parameters'"
    ),
    "uncertank.nn.from_pretrained": (
        "uncertank.nn.loading: TypeError from an operation, not a raise, at uncertank/plugins.py:388: TypeError: unhashable type: 'dict'"
    ),
    "uncertank.nn.head_dimensions": (
        "uncertank.nn.model: AttributeError raised at uncertank/nn/model.py:190: AttributeError: 'float' object has no attribute 'config'"
    ),
    "uncertank.nn.load_model": (
        "uncertank.nn.checkpoint: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.nn.load_ranker": (
        "uncertank.nn.loading: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.nn.mc_implementation": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:479: AttributeError: 'QuerySet' object has no attribute 'type'"
    ),
    "uncertank.nn.mc_passes": (
        "uncertank.nn.inference: IndexError from an operation, not a raise, at uncertank/nn/inference.py:451: IndexError: only integers, slices (`:`), ellipsis (`...`), nump"
    ),
    "uncertank.nn.model_device": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:191: AttributeError: 'str' object has no attribute 'parameters'"
    ),
    "uncertank.nn.output_probabilities": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:218: AttributeError: 'PosixPath' object has no attribute 'float'"
    ),
    "uncertank.nn.pool_encoder": (
        "uncertank.nn.model: TypeError from an operation, not a raise, at uncertank/nn/model.py:235: TypeError: 'float' object is not callable"
    ),
    "uncertank.nn.pretrained.recorded_pair_format": (
        "uncertank.nn.pretrained: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.nn.read_classifier": (
        "uncertank.nn.pretrained: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.nn.read_manifest": (
        "uncertank.nn.checkpoint: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.nn.save_model": (
        "uncertank.nn.checkpoint: AttributeError raised at uncertank/nn/checkpoint.py:79: AttributeError: 'str' object has no attribute 'state_dict'"
    ),
    "uncertank.nn.save_pretrained": (
        "uncertank.nn.export: AttributeError raised at uncertank/nn/export.py:181: AttributeError: 'float' object has no attribute 'check_fitted'"
    ),
    "uncertank.nn.score_batches": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:279: AttributeError: 'float' object has no attribute 'n_pairs'"
    ),
    "uncertank.nn.score_probabilities": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:191: AttributeError: 'str' object has no attribute 'parameters'"
    ),
    "uncertank.nn.testing.tiny_classifier_folder": (
        "uncertank.nn.testing: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.nn.train_cross_encoder": (
        "uncertank.nn.training: AttributeError raised at uncertank/nn/inputs.py:203: AttributeError: 'float' object has no attribute 'get_vocab'"
    ),
    "uncertank.nn.write_manifest": (
        "uncertank.nn.checkpoint: TypeError from a dependency at inside the standard library (pathlib.py): TypeError: expected str, bytes or os.PathLike object, not float"
    ),
    "uncertank.plugin_listing.plugin_report": (
        "uncertank.plugin_listing: ValueError from an operation, not a raise, at uncertank/plugins.py:287: ValueError: The truth value of an array with more than one element i"
    ),
    "uncertank.plugin_listing.render_plugin_report": (
        "uncertank.plugin_listing: AttributeError raised at uncertank/plugin_listing.py:80: AttributeError: 'float' object has no attribute 'get'"
    ),
    "uncertank.plugin_packages.lazy_exports": (
        "uncertank.plugin_packages: TypeError from an operation, not a raise, at uncertank/plugin_packages.py:43: TypeError: 'float' object is not iterable"
    ),
    "uncertank.plugins.Registry": (
        "uncertank.plugins: TypeError from an operation, not a raise, at uncertank/plugins.py:383: TypeError: 'float' object is not iterable"
    ),
    "uncertank.plugins.UnknownParameterError": (
        "uncertank.plugins: TypeError from an operation, not a raise, at uncertank/plugins.py:133: TypeError: 'int' object is not iterable"
    ),
    "uncertank.plugins.name_clashes": (
        "uncertank.plugins: ValueError from an operation, not a raise, at uncertank/plugins.py:287: ValueError: The truth value of an array with more than one element i"
    ),
    "uncertank.plugins.register": (
        "uncertank.plugins: ValueError from a dependency at inside pluggy ValueError: The truth value of an empty array is ambiguous. Use `array.size > 0` to check that"
    ),
    "uncertank.plugins.registry": (
        "uncertank.plugins: ValueError from an operation, not a raise, at uncertank/plugins.py:287: ValueError: The truth value of an array with more than one element i"
    ),
    "uncertank.progress.format_duration": (
        "uncertank.progress: TypeError from an operation, not a raise, at uncertank/progress.py:48: TypeError: type numpy.ndarray doesn't define __round__ method"
    ),
}
