# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Go encoding/json decoding and encoding rules used by the checkpoint reader/writer."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import gojson, gospew

S = gojson.string_type()
INNER = gojson.struct_type("pkg.Inner", [gojson.Field("Size", "size", gojson.uint_type()),
                                         gojson.Field("Tags", "tags", gojson.slice_type(gojson.int_type()))])
OUTER = gojson.struct_type("pkg.Outer", [
    gojson.Field("Name", "name", S),
    gojson.Field("Labels", "labels", gojson.map_type(S, S), omitempty=True),
    gojson.Field("Items", "items", gojson.slice_type(INNER)),
    gojson.Field("ByID", "byId", gojson.map_type(gojson.int_type(), gojson.ptr_type(INNER))),
    gojson.Field("Count", "count", gojson.int_type(), omitempty=True),
])


def test_case_insensitive_keys_exact_and_folded():
    value = gojson.unmarshal('{"NAME":"a","Labels":{"k":"v"},"\u212aey":1}', OUTER)
    assert value["Name"] == "a" and value["Labels"] == {"k": "v"}
    # the Kelvin sign folds to k (Go's bytes.EqualFold), long s to s
    folded = gojson.struct_type("pkg.K", [gojson.Field("Key", "key", S), gojson.Field("Size", "size", S)])
    assert gojson.unmarshal('{"\u212aEY":"x","\u017fize":"y"}', folded) == {"Key": "x", "Size": "y"}


def test_null_semantics():
    value = gojson.unmarshal('{"name":null,"labels":null,"items":null,"byId":{"1":null}}', OUTER,
                             {"Name": "keep", "Labels": {"a": "b"}})
    assert value["Name"] == "keep"          # null leaves a string unchanged
    assert value["Labels"] is None           # ... and makes a map nil
    assert value["Items"] is None
    assert value["ByID"] == {1: None}        # nil pointer element


def test_duplicate_keys_merge_maps_and_replace_scalars():
    value = gojson.unmarshal('{"name":"a","labels":{"x":"1"},"name":"b","labels":{"y":"2"}}', OUTER)
    assert value["Name"] == "b" and value["Labels"] == {"x": "1", "y": "2"}
    # map elements are fresh values: a duplicate map key replaces, it does not merge
    value = gojson.unmarshal('{"byId":{"1":{"size":5},"1":{"tags":[1]}}}', OUTER)
    assert value["ByID"] == {1: {"Size": 0, "Tags": [1]}}
    # a duplicated array of structs is decoded element-wise into the earlier elements
    value = gojson.unmarshal('{"items":[{"size":1,"tags":[7]},{"size":2}],"items":[{"size":3}]}', OUTER)
    assert value["Items"] == [{"Size": 3, "Tags": [7]}]


@pytest.mark.parametrize("text, message", [
    ('{"count":"1"}', "json: cannot unmarshal string into Go struct field Outer.count of type int"),
    ('{"count":1e2}', "json: cannot unmarshal number 1e2 into Go struct field Outer.count of type int"),
    ('{"byId":{"x":{}}}', "json: cannot unmarshal number x into Go struct field Outer.byId of type int"),
    ('{"byId":{"1":{"size":-1}}}', "json: cannot unmarshal number -1 into Go struct field Inner.byId.size of type uint64"),
    ('{"items":[{"tags":[true]}]}', "json: cannot unmarshal bool into Go struct field Inner.items.tags of type int"),
    ('{"items":{}}', "json: cannot unmarshal object into Go struct field Outer.items of type []pkg.Inner"),
    ('{"name":1,"count":"x"}', "json: cannot unmarshal number into Go struct field Outer.name of type string"),
    ("[1]", "json: cannot unmarshal array into Go value of type pkg.Outer"),
])
def test_type_errors_first_one_reported(text, message):
    with pytest.raises(gojson.GoJSONError) as info:
        gojson.unmarshal(text, OUTER)
    assert str(info.value) == message


def test_decoding_continues_after_a_type_error():
    value, error = gojson.decode_tree(gojson.parse('{"name":1,"count":7}'), OUTER)
    assert value["Count"] == 7 and error is not None


def test_marshal_order_omitempty_sorting():
    value = {"Name": "<a&b>", "Labels": {}, "Items": [], "ByID": {10: {"Size": 1, "Tags": None}, 2: None},
             "Count": 0}
    assert gojson.marshal(value, OUTER) == (
        '{"name":"\\u003ca\\u0026b\\u003e","items":[],"byId":{"10":{"size":1,"tags":null},"2":null}}')
    value["Labels"], value["Items"], value["Count"] = {"b": "", "a": "\u2028"}, None, -3
    assert gojson.marshal(value, OUTER).startswith(
        '{"name":"\\u003ca\\u0026b\\u003e","labels":{"a":"\\u2028","b":""},"items":null,')
    assert gojson.marshal(value, OUTER).endswith(',"count":-3}')


@pytest.mark.parametrize("text, encoded", [
    ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
    ("\x00\x1f\x7f", '"\\u0000\\u001f\x7f"'),
    ('"\\/', '"\\"\\\\/"'),
    ("\u00e9\u4e2d\U0001f600", '"\u00e9\u4e2d\U0001f600"'),
    ("\u2029", '"\\u2029"'),
])
def test_encode_string(text, encoded):
    assert gojson.encode_string(text) == encoded


def test_surrogate_escapes_become_replacement_characters():
    assert gojson.unmarshal('{"name":"a\\ud800b"}', OUTER)["Name"] == "a\ufffdb"
    assert gojson.unmarshal('{"name":"\\ud83d\\ude00"}', OUTER)["Name"] == "\U0001f600"


def test_spew_nil_pointer_and_types():
    by_id = {3: None, 1: {"Size": 2, "Tags": None}}
    value = {"Name": "x", "Labels": None, "Items": [{"Size": 1, "Tags": []}], "ByID": by_id, "Count": -1}
    assert gospew.spew(value, gojson.ptr_type(OUTER)) == (
        "(*pkg.Outer){Name:(string)x Labels:(map[string]string)<nil> Items:([]pkg.Inner)[{Size:(uint64)1 "
        "Tags:([]int)[]}] ByID:(map[int]*pkg.Inner)map[1:<*>{Size:(uint64)2 Tags:([]int)<nil>} 3:<nil>] "
        # go-spew quirk: a nil pointer as a map's last value leaves ignoreNextType set
        "Count:-1}")
    by_id = {3: None, 4: {"Size": 2, "Tags": None}}  # nil not last: the next key clears the flag
    assert gospew.spew(dict(value, ByID=by_id), gojson.ptr_type(OUTER)).endswith(
        "map[3:<nil> 4:<*>{Size:(uint64)2 Tags:([]int)<nil>}] Count:(int)-1}")
    assert gospew.spew(None, gojson.ptr_type(OUTER)) == "(*pkg.Outer)<nil>"
