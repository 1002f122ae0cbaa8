# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The JUnit XML that Jenkins' xunit plugin accepts, as an XML schema of our own, and a reader.

What it encodes (the xunit plugin's ``junit-10.xsd``, jenkinsci/xunit-plugin): ``testsuites``
holds ``testsuite`` elements and may carry name, time, tests, failures and errors (no skipped);
a ``testsuite`` must carry name, tests, failures and errors and holds ``testsuite``,
``properties``, ``testcase``, ``system-out`` and ``system-err`` in any order; a ``testcase``
must carry a name, may carry time, classname and group, and holds only ``skipped``, ``error``,
``failure``, the rerun/flaky elements, ``system-out`` and ``system-err`` - no ``properties``.
Times are plain decimal numbers.
"""

from __future__ import annotations

XSD = """<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:simpleType name="Seconds">
    <xs:restriction base="xs:string"><xs:pattern value="[0-9]*(\\.[0-9]*)?"/></xs:restriction>
  </xs:simpleType>
  <xs:complexType name="Outcome" mixed="true">
    <xs:attribute name="type" type="xs:string"/>
    <xs:attribute name="message" type="xs:string"/>
  </xs:complexType>
  <xs:complexType name="Rerun" mixed="true">
    <xs:sequence>
      <xs:element name="stackTrace" type="xs:string" minOccurs="0"/>
      <xs:element name="system-out" type="xs:string" minOccurs="0"/>
      <xs:element name="system-err" type="xs:string" minOccurs="0"/>
    </xs:sequence>
    <xs:attribute name="type" type="xs:string" use="required"/>
    <xs:attribute name="message" type="xs:string"/>
  </xs:complexType>
  <xs:complexType name="Property">
    <xs:attribute name="name" type="xs:string" use="required"/>
    <xs:attribute name="value" type="xs:string" use="required"/>
  </xs:complexType>
  <xs:complexType name="Properties">
    <xs:sequence><xs:element name="property" type="Property" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
  </xs:complexType>
  <xs:complexType name="TestCase">
    <xs:choice minOccurs="0" maxOccurs="unbounded">
      <xs:element name="skipped" type="Outcome"/>
      <xs:element name="error" type="Outcome"/>
      <xs:element name="failure" type="Outcome"/>
      <xs:element name="rerunFailure" type="Rerun"/>
      <xs:element name="rerunError" type="Rerun"/>
      <xs:element name="flakyFailure" type="Rerun"/>
      <xs:element name="flakyError" type="Rerun"/>
      <xs:element name="system-out" type="xs:string"/>
      <xs:element name="system-err" type="xs:string"/>
    </xs:choice>
    <xs:attribute name="name" type="xs:string" use="required"/>
    <xs:attribute name="time" type="xs:string"/>
    <xs:attribute name="classname" type="xs:string"/>
    <xs:attribute name="group" type="xs:string"/>
  </xs:complexType>
  <xs:complexType name="TestSuite">
    <xs:choice minOccurs="0" maxOccurs="unbounded">
      <xs:element name="testsuite" type="TestSuite"/>
      <xs:element name="properties" type="Properties"/>
      <xs:element name="testcase" type="TestCase"/>
      <xs:element name="system-out" type="xs:string"/>
      <xs:element name="system-err" type="xs:string"/>
    </xs:choice>
    <xs:attribute name="name" type="xs:string" use="required"/>
    <xs:attribute name="tests" type="xs:string" use="required"/>
    <xs:attribute name="failures" type="xs:string" use="required"/>
    <xs:attribute name="errors" type="xs:string" use="required"/>
    <xs:attribute name="skipped" type="xs:string"/>
    <xs:attribute name="time" type="Seconds"/>
    <xs:attribute name="group" type="xs:string"/>
    <xs:attribute name="timestamp" type="xs:string"/>
    <xs:attribute name="hostname" type="xs:string"/>
    <xs:attribute name="id" type="xs:string"/>
    <xs:attribute name="package" type="xs:string"/>
    <xs:attribute name="file" type="xs:string"/>
    <xs:attribute name="log" type="xs:string"/>
    <xs:attribute name="url" type="xs:string"/>
  </xs:complexType>
  <xs:element name="testsuite" type="TestSuite"/>
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence><xs:element name="testsuite" type="TestSuite" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="time" type="Seconds"/>
      <xs:attribute name="tests" type="xs:string"/>
      <xs:attribute name="failures" type="xs:string"/>
      <xs:attribute name="errors" type="xs:string"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""

_SCHEMA = None


def schema():
    global _SCHEMA
    if _SCHEMA is None:
        import xmlschema

        _SCHEMA = xmlschema.XMLSchema10(XSD)
    return _SCHEMA


def schema_errors(text):
    """The schema's complaints about the JUnit document ``text`` (empty: valid)."""
    return [str(e.reason or e) + " at " + str(e.path) for e in schema().iter_errors(text.encode("utf-8") if isinstance(text, str) else text)]


def read_junit(text):
    """host -> (outcome, text) of a valid JUnit document, read through the schema's decoder;
    outcome is failure, error, skipped or ok. Raises AssertionError listing every schema error."""
    errors = schema_errors(text)
    assert not errors, "JUnit not valid against Jenkins xunit's schema (%d error(s)): %s" % (len(errors), errors)
    decoded = schema().to_dict(text.encode("utf-8") if isinstance(text, str) else text)
    suites = decoded.get("testsuite", []) if "testsuite" in decoded else []
    cases = {}
    for suite in suites:
        for case in suite.get("testcase", []):
            outcome = next((k for k in ("failure", "error", "skipped") if k in case), "ok")
            body = case.get(outcome) if outcome != "ok" else case.get("system-out")
            if isinstance(body, list):
                body = body[0]
            if isinstance(body, dict):
                body = body.get("$", "")
            cases[case["@name"]] = (outcome, body or "")
    return cases
