#!/usr/bin/env python3
"""Checks Sources/CloudHTTP/Resources/openapi.yaml: it parses, it is OpenAPI 3.0.x, and it lists exactly the
(method, path) pairs the server routes. When openapi-spec-validator is installed, the document is also validated
against the OpenAPI 3.0 schema (pip install openapi-spec-validator); it is optional.

Usage: python3 scripts/check-openapi.py [PATH]    (exit 0 when the document is fine, 1 otherwise)

Keep ROUTES in step with the routers: DatabaseController.addRoutes, AssetController.addRoutes,
SignInController.addRoutes, OperationsController.addRoutes and the extension endpoints (CanonicalEndpoints).
"""
import re
import sys
from pathlib import Path

try:
    import yaml
except ImportError:
    sys.exit("check-openapi: PyYAML is needed (pip install pyyaml or apt-get install python3-yaml)")

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPEC = ROOT / "Sources/CloudHTTP/Resources/openapi.yaml"

DB = "/database/1/{container}/{environment}/{database}/"

# CloudKit Web Services endpoints the server implements.
CLOUDKIT = [
    ("post", "records/modify"), ("post", "records/lookup"), ("post", "records/query"), ("post", "records/changes"),
    ("post", "changes/zone"), ("post", "changes/database"), ("post", "zones/changes"),
    ("get", "zones/list"), ("post", "zones/lookup"), ("post", "zones/modify"),
    ("post", "assets/upload"), ("post", "assets/rereference"),
    ("get", "users/current"), ("get", "users/caller"),
    ("get", "subscriptions/list"), ("post", "subscriptions/list"), ("post", "subscriptions/lookup"), ("post", "subscriptions/modify"),
    ("post", "tokens/create"), ("post", "tokens/register"),
]
# CloudKit endpoints answered with BAD_REQUEST "not supported", on GET and POST.
UNSUPPORTED = ["records/resolve", "records/accept", "users/discover", "users/lookup/email", "users/lookup/id"]
# Extension endpoints.
EXTENSIONS = [
    ("post", "canonical/resolve"), ("post", "canonical/nearby"),
    ("post", "canonical/games"), ("post", "canonical/gameDates"), ("post", "canonical/match"), ("post", "canonical/standings"),
    ("post", "changes/wait"), ("post", "users/delete"), ("post", "users/export"),
]

ROUTES = (
    {(method, DB + sub) for method, sub in CLOUDKIT}
    | {(method, DB + sub) for sub in UNSUPPORTED for method in ("get", "post")}
    | {(method, DB + sub) for method, sub in EXTENSIONS}
    | {
        ("post", "/assets/upload/{upload}"),
        ("head", "/assets/upload/{upload}"),
        ("get", "/assets/download/{owner}/{checksum}/{file}"),
        ("head", "/assets/download/{owner}/{checksum}/{file}"),
        ("get", "/health"),
        ("get", "/ready"),
        ("get", "/metrics"),
        ("get", "/signin"),
        ("post", "/signin"),
        ("post", "/signout"),
        ("get", "/openapi.yaml"),
        ("post", "/device/1/{container}/{environment}/tokens/create"),
        ("post", "/device/1/{container}/{environment}/tokens/register"),
        ("get", "/webcourier/aps"),
        ("get", "/public/1/{container}/{environment}/versions"),
        ("get", "/public/1/{container}/{environment}/changes/{zone}"),
        ("get", "/public/1/{container}/{environment}/snapshot"),
    }
)

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
# Every CloudKit database operation (not the unsupported ones) documents these error statuses.
CLOUDKIT_ERROR_STATUSES = {"400", "401", "403", "404", "409", "410", "412", "413", "421", "500", "503"}


def resolve(document, node):
    """Follows a local `$ref` (one level is all this document uses for parameters and responses)."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"non-local $ref {ref}")
        target = document
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def check_refs(document, node, where, problems):
    """Every local `$ref` must point at something."""
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            try:
                resolve(document, {"$ref": node["$ref"]})
            except (KeyError, TypeError, ValueError):
                problems.append(f"{where}: $ref {node['$ref']} does not resolve")
        for key, value in node.items():
            check_refs(document, value, f"{where}/{key}", problems)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            check_refs(document, value, f"{where}/{index}", problems)


def main():
    spec_path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SPEC
    try:
        document = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    except OSError as error:
        sys.exit(f"check-openapi: cannot read {spec_path}: {error}")
    except yaml.YAMLError as error:
        sys.exit(f"check-openapi: {spec_path} is not valid YAML:\n{error}")
    if not isinstance(document, dict):
        sys.exit(f"check-openapi: {spec_path} is not a YAML mapping")

    problems = []
    version = str(document.get("openapi", ""))
    if not re.fullmatch(r"3\.0\.\d+", version):
        problems.append(f"openapi is {version!r}; expected 3.0.x")
    paths = document.get("paths")
    if not isinstance(paths, dict):
        sys.exit(f"check-openapi: {spec_path} has no paths")

    found = set()
    for path, item in paths.items():
        if not isinstance(item, dict):
            problems.append(f"{path}: not a path item")
            continue
        for method, operation in item.items():
            if method not in METHODS:
                continue
            found.add((method, path))
            # Every {name} in the path must be declared as a required path parameter (path or operation level).
            declared = {}
            for parameter in list(item.get("parameters", [])) + list(operation.get("parameters", [])):
                parameter = resolve(document, parameter)
                if parameter.get("in") == "path":
                    declared[parameter.get("name")] = parameter.get("required") is True
            for name in re.findall(r"\{([^}]+)\}", path):
                if name not in declared:
                    problems.append(f"{method.upper()} {path}: path parameter {name} is not declared")
                elif not declared[name]:
                    problems.append(f"{method.upper()} {path}: path parameter {name} must be required")
            responses = operation.get("responses") or {}
            if not responses:
                problems.append(f"{method.upper()} {path}: no responses")
            if "500" not in responses:
                problems.append(f"{method.upper()} {path}: no 500 response (INTERNAL_ERROR)")
            if (method, path[len(DB):]) in CLOUDKIT and path.startswith(DB):
                missing = CLOUDKIT_ERROR_STATUSES - set(map(str, responses))
                if "200" not in responses:
                    problems.append(f"{method.upper()} {path}: no 200 response")
                if missing:
                    problems.append(f"{method.upper()} {path}: missing error responses {sorted(missing)}")

    for method, path in sorted(ROUTES - found, key=lambda pair: (pair[1], pair[0])):
        problems.append(f"missing operation: {method.upper()} {path}")
    for method, path in sorted(found - ROUTES, key=lambda pair: (pair[1], pair[0])):
        problems.append(f"operation the server does not route: {method.upper()} {path}")

    schemas = (document.get("components") or {}).get("schemas") or {}
    if "CloudKitError" not in schemas:
        problems.append("components/schemas/CloudKitError is missing")
    check_refs(document, document, "#", problems)

    validator = "not installed (pip install openapi-spec-validator to also validate against the OpenAPI schema)"
    try:
        from openapi_spec_validator import validate as validate_spec
    except ImportError:
        validate_spec = None
    if validate_spec is not None:
        try:
            validate_spec(document)
            validator = "passed"
        except Exception as error:  # the validator's own exception types differ between its versions
            validator = "failed"
            problems.append(f"openapi-spec-validator: {str(error).splitlines()[0]}")

    if problems:
        print(f"check-openapi: {spec_path}: {len(problems)} problem(s)", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        sys.exit(1)
    print(f"check-openapi: {spec_path.relative_to(ROOT) if spec_path.is_relative_to(ROOT) else spec_path}: "
          f"OpenAPI {version}, {len(found)} operations as routed; openapi-spec-validator {validator}")


if __name__ == "__main__":
    main()
