"""Records read from JSON are validated by pydantic: a value of the wrong type is refused by name, never coerced."""
import pytest

from retrieval.judgments.raters import CasePolicy
from retrieval.pipeline.config import PipelineConfig


def test_a_stored_case_policy_round_trips_and_a_wrong_type_is_refused_by_name():
    policy = CasePolicy(combine="majority", k=5)
    assert CasePolicy.from_json(policy.to_json()) == policy
    assert CasePolicy.from_json("{}") == CasePolicy()
    with pytest.raises(ValueError, match=r"^case policy field k: Input should be a valid integer, got a number with "
                                         r"a fractional part$"):
        CasePolicy.from_json('{"k": 2.5}')  # int(2.5) once made it 2
    with pytest.raises(ValueError, match=r"^case policy field rater: Input should be a valid string$"):
        CasePolicy.from_json('{"combine": "rater", "rater": 5}')
    with pytest.raises(ValueError, match=r"^case policy: combination policy 'bad' is unknown; use one of mean, "
                                         r"majority, rater$"):
        CasePolicy.from_json('{"combine": "bad"}')


def test_a_config_file_field_of_the_wrong_type_is_refused_not_truncated():
    cfg = PipelineConfig(hyde=True).with_(dense_weight=0.4, sparse_weight=0.6)
    assert PipelineConfig.from_json(cfg.to_json()) == cfg
    assert PipelineConfig.from_json('{"top_k": 5}').settings.recall_top_k == 5  # an older file's name
    with pytest.raises(ValueError, match=r"^config field 'rrf_k' must be a int, got 2.5$"):
        PipelineConfig.from_json('{"rrf_k": 2.5}')  # int(2.5) once made it 2
    with pytest.raises(ValueError, match=r"^config field 'hyde' must be true or false, got 'false'$"):
        PipelineConfig.from_json('{"hyde": "false"}')
    with pytest.raises(ValueError, match=r"^unknown config field\(s\): speed, zoom$"):
        PipelineConfig.from_json('{"zoom": 1, "speed": 3}')
