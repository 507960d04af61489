"""retrieval.access as pure functions: allowed, denied, malformed, unknown user → no access (never full access)."""
from __future__ import annotations

import json

import pytest

from retrieval.access import (
    NOT_SIGNED_IN, AccessConfig, AccessDenied, PolicyError, ReadOnlyError, allowed_scopes, can_write, canonical_user,
    check_scope, check_write, demo_mode_from_env, load_config, load_policy, oidc_user, parse_policy, query_scope,
    resolve, visible)
from retrieval.types import Scope

POLICY_TOML = """
[users."Alice@Example.com"]
scopes = ["user:alice"]
write = true
groups = ["viewers"]

[users."root@example.com"]
scopes = ["*"]
write = true

[groups.viewers]
scopes = ["user:maya"]
members = ["bob@example.com", "@partner.org"]

[groups.everyone]
scopes = ["user:demo"]
members = []
"""
MAYA, ALICE, DEMO = Scope("user", "maya"), Scope("user", "alice"), Scope("user", "demo")


@pytest.fixture
def policy(tmp_path):
    p = tmp_path / "access.toml"
    p.write_text(POLICY_TOML)
    return load_policy(p)


def test_a_user_sees_their_own_and_their_groups_scopes(policy):
    assert allowed_scopes(policy, "alice@example.com") == {"user:alice", "user:maya"}
    assert allowed_scopes(policy, " ALICE@example.com ") == {"user:alice", "user:maya"}  # case and spaces
    assert can_write(policy, "alice@example.com") is True
    check_scope(policy, "alice@example.com", ALICE)
    check_scope(policy, "alice@example.com", "user:maya")


def test_group_members_by_address_and_by_domain(policy):
    assert allowed_scopes(policy, "bob@example.com") == {"user:maya"}
    assert allowed_scopes(policy, "carol@partner.org") == {"user:maya"}
    assert can_write(policy, "bob@example.com") is False
    with pytest.raises(AccessDenied, match="not in the access policy"):
        allowed_scopes(policy, "eve@notpartner.org.evil")  # a domain is the whole part after the @


def test_star_means_every_scope_and_all_scopes_only_for_it(policy):
    assert allowed_scopes(policy, "root@example.com") is None
    check_scope(policy, "root@example.com", None)
    with pytest.raises(AccessDenied, match="not all scopes"):
        check_scope(policy, "bob@example.com", None)


def test_scope_outside_the_grant_is_denied(policy):
    with pytest.raises(AccessDenied, match="user:alice is not visible to bob@example.com"):
        check_scope(policy, "bob@example.com", ALICE)
    with pytest.raises(AccessDenied, match="user:demo"):
        check_scope(policy, "alice@example.com", DEMO)  # a group with no members grants nobody


@pytest.mark.parametrize("user", ["mallory@example.com", "", "   ", "alice@example.com.evil"])
def test_unknown_or_missing_user_gets_nothing(policy, user):
    for fn in (allowed_scopes, can_write):
        with pytest.raises(AccessDenied):
            fn(policy, user)
    with pytest.raises(AccessDenied):
        check_scope(policy, user, MAYA)


@pytest.mark.parametrize("doc, message", [
    ("users = 3", "'users' must be a table"),
    ('[users."a@x.org"]\nscopes = "user:a"', "scopes must be a list"),
    ('[users."a@x.org"]\nscopes = ["usr:a"]', "'usr' is not one of"),
    ('[users."a@x.org"]\nscopes = ["alice"]', "must look like 'user:u1'"),
    ('[users."a@x.org"]\nscopes = ["user:a"]\nwrite = "maybe"', "write must be true or false"),
    ('[users."a@x.org"]\nscope = ["user:a"]', "unknown key.*scope"),
    ('[users."a@x.org"]\ngroups = ["ghosts"]', "group.*ghosts.*does not define"),
    ('[groups.g]\nmembers = "a@x.org"', "members must be a list"),
    ('[user."a@x.org"]\nscopes = ["user:a"]', "unknown top-level key.*user"),
    ("", "grants nothing"),
    ("[users.\n", "not valid TOML"),
])
def test_malformed_policy_raises_and_grants_nothing(tmp_path, doc, message):
    p = tmp_path / "bad.toml"
    p.write_text(doc)
    with pytest.raises(PolicyError, match=message):
        load_policy(p)


def test_json_policy_and_unreadable_files(tmp_path):
    p = tmp_path / "access.json"
    p.write_text(json.dumps({"users": {"a@x.org": {"scopes": ["user:a"]}}}))
    assert allowed_scopes(load_policy(p), "a@x.org") == {"user:a"}
    p.write_text("{not json")
    with pytest.raises(PolicyError, match="not valid JSON"):
        load_policy(p)
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "missing.toml")
    with pytest.raises(PolicyError, match="must be a table"):
        parse_policy(["not", "a", "table"])


def test_config_env_over_section_and_validation():
    cfg = load_config({}, {})
    assert cfg == AccessConfig() and not cfg.read_only and cfg.auth == "none"
    assert load_config({"RETRIEVAL_MODE": "demo"}, {}).read_only
    assert load_config({"RETRIEVAL_MODE": "normal"}, {"mode": "demo"}).mode == "normal"  # the env wins
    assert load_config({}, {"mode": "demo", "allow_grading": True}).allow_grading
    assert load_config({}, {"oidc_configured": True}).auth == "oidc"  # [auth] in secrets: sign-in is on
    proxy = load_config({"RETRIEVAL_AUTH": "proxy", "RETRIEVAL_POLICY": "p.toml"}, {})
    assert (proxy.auth, proxy.header, proxy.policy) == ("proxy", "X-Forwarded-Email", "p.toml")
    with pytest.raises(PolicyError, match="mode is 'demoo'; use one of normal, demo"):
        load_config({"RETRIEVAL_MODE": "demoo"}, {})
    with pytest.raises(PolicyError, match="auth is 'saml'"):
        load_config({}, {"auth": "saml"})
    with pytest.raises(PolicyError, match="unknown access setting"):
        load_config({}, {"polcy": "x"})
    with pytest.raises(PolicyError, match="not an HTTP header"):
        load_config({"RETRIEVAL_AUTH": "proxy", "RETRIEVAL_AUTH_HEADER": "X-Email: a"}, {})
    with pytest.raises(PolicyError, match="no sign-in"):  # a policy nobody is checked against
        load_config({"RETRIEVAL_POLICY": "p.toml"}, {})


def test_demo_mode_from_env_refuses_on_any_non_normal_value():
    assert not demo_mode_from_env({}) and not demo_mode_from_env({"RETRIEVAL_MODE": "normal"})
    assert demo_mode_from_env({"RETRIEVAL_MODE": "demo"}) and demo_mode_from_env({"RETRIEVAL_MODE": "dmo"})


def test_resolve_local_use_keeps_todays_behaviour():
    acc = resolve(AccessConfig(), None, None)
    assert (acc.user, acc.scopes, acc.write, acc.grade, acc.denied) == ("local", None, True, True, None)
    demo = resolve(AccessConfig(mode="demo"), None, None)
    assert demo.read_only and not demo.write and not demo.grade and demo.sees(None)
    assert resolve(AccessConfig(mode="demo", allow_grading=True), None, None).grade


def test_resolve_signed_in_users(policy):
    proxy = AccessConfig(auth="proxy", policy="p")
    assert resolve(proxy, None, policy).denied == NOT_SIGNED_IN
    assert "no access policy" in resolve(proxy, "alice@example.com", None).denied
    unknown = resolve(proxy, "mallory@example.com", policy)
    assert unknown.denied and unknown.scopes == frozenset() and not unknown.write and not unknown.sees(MAYA)
    bob = resolve(proxy, "bob@example.com", policy)
    assert bob.limited and bob.scopes == {"user:maya"} and not bob.write and not bob.grade
    assert visible(bob, [ALICE, MAYA, DEMO]) == [MAYA]
    alice_demo = resolve(AccessConfig(auth="proxy", policy="p", mode="demo"), "alice@example.com", policy)
    assert alice_demo.read_only and not alice_demo.write and not alice_demo.grade  # demo beats the write grant
    assert resolve(AccessConfig(auth="proxy", policy="p", mode="demo", allow_grading=True),
                   "alice@example.com", policy).grade


def test_query_scope_limits_the_pipeline_scope(policy):
    bob = resolve(AccessConfig(auth="proxy", policy="p"), "bob@example.com", policy)
    assert query_scope(bob, MAYA) == MAYA
    with pytest.raises(AccessDenied, match="all scopes is not available"):
        query_scope(bob, None)
    with pytest.raises(AccessDenied, match="user:alice is not visible"):
        query_scope(bob, ALICE)
    root = resolve(AccessConfig(auth="proxy", policy="p"), "root@example.com", policy)
    assert query_scope(root, None) is None
    with pytest.raises(AccessDenied):
        query_scope(resolve(AccessConfig(auth="proxy", policy="p"), "x@y.z", policy), MAYA)


def test_check_write(policy):
    cfg = AccessConfig(auth="proxy", policy="p")
    alice = resolve(cfg, "alice@example.com", policy)
    check_write(alice, ["user:alice", MAYA])
    with pytest.raises(AccessDenied, match="user:tomas are not yours"):
        check_write(alice, ["user:alice", "user:tomas"])
    with pytest.raises(ReadOnlyError, match="bob@example.com may not change"):
        check_write(resolve(cfg, "bob@example.com", policy), [MAYA])
    with pytest.raises(ReadOnlyError, match="read-only"):
        check_write(resolve(AccessConfig(mode="demo"), None, None), [MAYA])


# --- the sign-in identity: one ASCII address, whole-domain grants, verified OIDC e-mail ------------------

STAFF_POLICY = {"users": {"kate@example.com": {"scopes": ["*"], "write": True}},
                "groups": {"staff": {"scopes": ["user:maya"], "members": ["@staff.example.com"]}}}


def test_a_look_alike_character_does_not_sign_in_as_another_user():
    policy = parse_policy(STAFF_POLICY)
    kelvin = "\u212Aate@example.com"  # KELVIN SIGN: "\u212A".lower() == "k"
    assert kelvin.lower() == "kate@example.com"
    with pytest.raises(AccessDenied, match="not one plain e-mail address"):
        allowed_scopes(policy, kelvin)
    acc = resolve(AccessConfig(auth="proxy", policy="p"), kelvin, policy)
    assert acc.denied and acc.user != "kate@example.com" and acc.scopes == frozenset() and not acc.write
    for other in ("ｋate@example.com", "kate@ｅxample.com", "kate@example.com\u200b", "kåte@example.com"):
        assert resolve(AccessConfig(auth="proxy", policy="p"), other, policy).denied, other
    assert resolve(AccessConfig(auth="proxy", policy="p"), " Kate@Example.COM ", policy).user == "kate@example.com"


@pytest.mark.parametrize("value", [
    "x@evil.com,y@staff.example.com", "x@evil.com, y@staff.example.com", "x@evil.com;y@staff.example.com",
    "x@evil.com y@staff.example.com", "x@evil.com\ty@staff.example.com", "x@evil.com@staff.example.com",
    "<y@staff.example.com>", "Eve <y@staff.example.com>", "\"y@staff.example.com\"", "y@staff.example.com\x00",
    "@staff.example.com", "staff.example.com", "y@", "y@staff..example.com"])
def test_a_list_or_anything_but_one_address_gets_no_grant(value):
    policy = parse_policy(STAFF_POLICY)
    with pytest.raises(AccessDenied):
        allowed_scopes(policy, value)
    acc = resolve(AccessConfig(auth="proxy", policy="p"), value, policy)
    assert acc.denied and not acc.sees(MAYA)


def test_domain_grants_match_the_whole_domain():
    policy = parse_policy(STAFF_POLICY)
    assert allowed_scopes(policy, "y@staff.example.com") == {"user:maya"}
    assert allowed_scopes(policy, "Y@STAFF.example.com") == {"user:maya"}
    for user in ("y@sub.staff.example.com", "y@notstaff.example.com", "y@staff.example.com.evil"):
        with pytest.raises(AccessDenied, match="not in the access policy"):
            allowed_scopes(policy, user)


def test_canonical_user():
    assert canonical_user("  Alice@Example.com ") == "alice@example.com"
    assert canonical_user("first.last+tag@mail.example.org") == "first.last+tag@mail.example.org"
    for bad in (None, "", " ", "\u212Aate@example.com", "a@b,c@d", "a b@c"):
        with pytest.raises(AccessDenied):
            canonical_user(bad)


def test_oidc_needs_a_verified_email_unless_the_operator_opts_out():
    with pytest.raises(AccessDenied, match="has not verified"):
        oidc_user({"email": "maya@example.com"})  # no claim at all
    for unverified in (False, "false", None, "yes", 1):
        with pytest.raises(AccessDenied, match="has not verified"):
            oidc_user({"email": "maya@example.com", "email_verified": unverified})
    assert oidc_user({"email": "maya@example.com", "email_verified": True}) == "maya@example.com"
    assert oidc_user({"email": "maya@example.com", "email_verified": "true"}) == "maya@example.com"
    assert oidc_user({"email": "maya@example.com"}, allow_unverified=True) == "maya@example.com"
    assert oidc_user({"is_logged_in": True}) is None  # no e-mail: not signed in


def test_allow_unverified_email_is_an_explicit_setting():
    assert load_config({}, {}).allow_unverified_email is False
    assert load_config({}, {"auth": "oidc", "allow_unverified_email": True}).allow_unverified_email is True
    assert load_config({"RETRIEVAL_ALLOW_UNVERIFIED_EMAIL": "true"}, {}).allow_unverified_email is True
    assert load_config({"RETRIEVAL_ALLOW_UNVERIFIED_EMAIL": "0"}, {"allow_unverified_email": True}) \
        .allow_unverified_email is False  # the env wins
    with pytest.raises(PolicyError, match="allow_unverified_email must be true or false"):
        load_config({}, {"allow_unverified_email": "maybe"})
