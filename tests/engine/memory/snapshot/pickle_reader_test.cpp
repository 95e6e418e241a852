// The safe unpickler: every opcode it reads, on byte strings written by hand
// (each checked against Python's pickle.loads when written), and every way
// it refuses: code, truncation, bad memo, depth, expansion, bad text.
#include "engine/memory/snapshot/pickle_reader.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tidepool {
namespace {

using namespace std::string_literals;
using nlohmann::json;

json read(const std::string& bytes, const PlainDataLimits& limits = {}) { return read_pickle_json(bytes, "t.pickle", limits); }

// The message read() refuses `bytes` with.
std::string refusal(const std::string& bytes, const PlainDataLimits& limits = {}) {
  try {
    read(bytes, limits);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(read without an error)";
}

TEST(PickleReader, Integers) {
  EXPECT_EQ(read("\x80\x02K\x05."s), 5);                                  // BININT1
  EXPECT_EQ(read("\x80\x02M\x34\x12."s), 0x1234);                         // BININT2
  EXPECT_EQ(read("\x80\x02J\xff\xff\xff\xff."s), -1);                      // BININT
  EXPECT_EQ(read("\x80\x02J\x00\x00\x00\x80."s), -2147483648LL);
  EXPECT_EQ(read("\x80\x02\x8a\x05\x00\x00\x00\x00\x01."s), 1LL << 32);    // LONG1
  EXPECT_EQ(read("\x80\x02\x8a\x00."s), 0);
  EXPECT_EQ(read("\x80\x02\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80."s), INT64_MIN);
  const json top = read("\x80\x02\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00."s);  // 2^64 - 1
  ASSERT_TRUE(top.is_number_unsigned());
  EXPECT_EQ(top.get<std::uint64_t>(), UINT64_MAX);
  EXPECT_EQ(read("\x80\x02\x8a\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff."s), -1);  // redundant sign bytes
  EXPECT_EQ(read("\x80\x02\x8b\x02\x00\x00\x00\x00\x01."s), 256);         // LONG4
}

TEST(PickleReader, ScalarsAndText) {
  EXPECT_EQ(read("\x80\x02N\x88\x89\x87."s), json::parse("[null, true, false]"));  // NONE NEWTRUE NEWFALSE TUPLE3
  EXPECT_EQ(read("\x80\x02G\x3f\xf8\x00\x00\x00\x00\x00\x00."s), 1.5);      // BINFLOAT, big-endian
  EXPECT_EQ(read("\x80\x04\x8c\x02hi."s), "hi");                            // SHORT_BINUNICODE
  EXPECT_EQ(read("\x80\x02X\x02\x00\x00\x00hi."s), "hi");                   // BINUNICODE
  EXPECT_EQ(read("\x80\x04\x8d\x03\x00\x00\x00\x00\x00\x00\x00\xc3\xa9!."s), "\xc3\xa9!");  // BINUNICODE8
  const json bytes = json::binary({'x', 'y'});
  EXPECT_EQ(read("\x80\x03" "C\x02xy."s), bytes);                            // SHORT_BINBYTES
  EXPECT_EQ(read("\x80\x03" "B\x02\x00\x00\x00xy."s), bytes);                // BINBYTES
  EXPECT_EQ(read("\x80\x04\x8e\x02\x00\x00\x00\x00\x00\x00\x00xy."s), bytes);  // BINBYTES8
  EXPECT_EQ(read("\x80\x05\x96\x02\x00\x00\x00\x00\x00\x00\x00xy."s), bytes);  // BYTEARRAY8
}

TEST(PickleReader, Containers) {
  // pickle.dumps([1, 2], 2): EMPTY_LIST BINPUT MARK ... APPENDS
  EXPECT_EQ(read("\x80\x02]q\x00(K\x01K\x02" "e."s), json::parse("[1, 2]"));
  EXPECT_EQ(read("\x80\x02]K\x01" "a."s), json::parse("[1]"));             // APPEND
  EXPECT_EQ(read("\x80\x02(K\x01K\x02l."s), json::parse("[1, 2]"));        // LIST
  // pickle.dumps({'a': 1, 'b': 2}, 2): EMPTY_DICT ... SETITEMS
  EXPECT_EQ(read("\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01K\x01X\x01\x00\x00\x00" "bq\x02K\x02u."s),
            json::parse(R"({"a": 1, "b": 2})"));
  EXPECT_EQ(read("\x80\x02}X\x01\x00\x00\x00" "aK\x01s."s), json::parse(R"({"a": 1})"));  // SETITEM
  EXPECT_EQ(read("\x80\x02(X\x01\x00\x00\x00" "aK\x01" "d."s), json::parse(R"({"a": 1})"));  // DICT
  EXPECT_EQ(read("\x80\x02)."s), json::array());                           // EMPTY_TUPLE
  EXPECT_EQ(read("\x80\x02K\x01\x85."s), json::parse("[1]"));              // TUPLE1
  EXPECT_EQ(read("\x80\x02K\x01K\x02\x86."s), json::parse("[1, 2]"));      // TUPLE2
  EXPECT_EQ(read("\x80\x02(K\x01K\x02K\x03K\x04t."s), json::parse("[1, 2, 3, 4]"));  // TUPLE
  EXPECT_EQ(read("\x80\x04\x8f(K\x01K\x02\x90."s), json::parse("[1, 2]"));  // EMPTY_SET ADDITEMS
  EXPECT_EQ(read("\x80\x04(K\x01\x91."s), json::parse("[1]"));             // FROZENSET
}

TEST(PickleReader, DictKeysAreTheStringsJsonDumpWrites) {
  EXPECT_EQ(read("\x80\x02}(K\x07K\x01\x88K\x02NK\x03u."s), json::parse(R"({"7": 1, "true": 2, "null": 3})"));
  EXPECT_NE(refusal("\x80\x02}(G\x3f\xf8\x00\x00\x00\x00\x00\x00K\x01u."s).find("a dict key that is not a str"),
            std::string::npos);
}

TEST(PickleReader, TheMemoSharesContainersAsPythonDoes) {
  // EMPTY_LIST MEMOIZE BINGET 0, then APPEND to the copy on top: both references see it.
  EXPECT_EQ(read("\x80\x04]\x94h\x00K\x07" "a\x86."s), json::parse("[[7], [7]]"));
  EXPECT_EQ(read("\x80\x02]p0\ng0\n\x86."s), json::parse("[[], []]"));      // PUT, GET (text)
  EXPECT_EQ(read("\x80\x02K\x05r\x05\x00\x00\x00j\x05\x00\x00\x00\x86."s), json::parse("[5, 5]"));  // LONG_BINPUT/GET
}

TEST(PickleReader, FrameAndStackOpcodes) {
  EXPECT_EQ(read("\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00K\x05."s), 5);  // FRAME
  EXPECT_EQ(read("\x80\x02K\x01K\x02" "0."s), 1);                           // POP
  EXPECT_EQ(read("\x80\x02K\x01(K\x02K\x03" "1."s), 1);                     // POP_MARK
  EXPECT_EQ(read("\x80\x02K\x01" "2\x86."s), json::parse("[1, 1]"));        // DUP
  EXPECT_EQ(read("\x80\x02K\x01.trailing bytes"s), 1);                      // after STOP: ignored, as pickle.loads does
}

TEST(PickleReader, RefusesOsSystemThroughGlobalAndReduce) {
  // The classic payload: cos\nsystem\n(S'echo hi'\ntR.
  EXPECT_EQ(refusal("cos\nsystem\n(S'echo hi'\ntR."s),
            "t.pickle: byte 0: opcode GLOBAL (0x63) would run code; Tidepool reads only plain data");
  // pickle.dumps of an object whose __reduce__ is (os.system, ('echo pwned',)), protocol 2 and 4.
  EXPECT_EQ(refusal("\x80\x02" "cposix\nsystem\nq\x00X\n\x00\x00\x00" "echo pwnedq\x01\x85q\x02Rq\x03."s),
            "t.pickle: byte 2: opcode GLOBAL (0x63) would run code; Tidepool reads only plain data");
  EXPECT_EQ(refusal("\x80\x04\x95%\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x94\x8c\x06system\x94\x93\x94\x8c\n"
                    "echo pwned\x94\x85\x94R\x94."s),
            "t.pickle: byte 28: opcode STACK_GLOBAL (0x93) would run code; Tidepool reads only plain data");
  EXPECT_EQ(refusal("\x80\x02N)R."s),
            "t.pickle: byte 4: opcode REDUCE (0x52) would run code; Tidepool reads only plain data");
}

TEST(PickleReader, RefusesEveryOpcodeThatNamesOrCallsCode) {
  const std::pair<std::string, const char*> opcodes[] = {
      {"b", "BUILD (0x62)"},      {"i", "INST (0x69)"},       {"o", "OBJ (0x6f)"},
      {"\x81", "NEWOBJ (0x81)"},  {"\x92", "NEWOBJ_EX (0x92)"}, {"P", "PERSID (0x50)"},
      {"Q", "BINPERSID (0x51)"},  {"\x82", "EXT1 (0x82)"},    {"\x83", "EXT2 (0x83)"},
      {"\x84", "EXT4 (0x84)"}};
  for (const auto& [code, name] : opcodes)
    EXPECT_EQ(refusal("\x80\x02N"s + code + "."),
              "t.pickle: byte 3: opcode "s + name + " would run code; Tidepool reads only plain data");
  EXPECT_NE(refusal("\x80\x05\x97."s).find("NEXT_BUFFER (0x97) asks for an out-of-band buffer"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02U\x02hi."s).find("SHORT_BINSTRING (0x55) is from pickle protocol 0 or 1 or Python 2"),
            std::string::npos);
}

TEST(PickleReader, RefusesBrokenInput) {
  EXPECT_EQ(refusal(""), "t.pickle: byte 0: the pickle ends without STOP (a truncated file?)");
  EXPECT_EQ(refusal("\x80\x02K\x05"s), "t.pickle: byte 4: the pickle ends without STOP (a truncated file?)");
  EXPECT_NE(refusal("\x80\x02K"s).find("byte 2: BININT1 needs 1 bytes, the input has 0 left"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02X\xff\xff\xff\x7f"s).find("BINUNICODE needs 2147483647 bytes"), std::string::npos);
  EXPECT_NE(refusal("\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00K\x05."s).find("a FRAME of 255 bytes runs past the end"),
            std::string::npos);
  EXPECT_EQ(refusal("\x80\x02h\x03."s), "t.pickle: byte 2: memo index 3 was never stored");
  EXPECT_NE(refusal("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."s).find("an integer beyond 64 bits"),
            std::string::npos);
  EXPECT_NE(refusal("\x80\x02\x8c\x01\xff."s).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(refusal("\x80\x06K\x01."s).find("pickle protocol 6; Tidepool reads protocols 2 to 5"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02\xff."s).find("byte 2: 0xff is not a pickle opcode"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02."s).find("STOP finds no value on the stack"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02K\x01(K\x02" "e."s).find("APPENDS needs a list below its values"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02K\x01" "e."s).find("APPENDS finds no MARK"), std::string::npos);
}

TEST(PickleReader, RefusesTooDeepSelfContainingAndExpandingData) {
  PlainDataLimits limits;
  limits.max_depth = 100;
  const std::string nested = "\x80\x02"s + std::string(150, ']') + std::string(149, 'a') + ".";
  // Found once STOP has returned: named with STOP's offset, not as the opcode there.
  EXPECT_EQ(refusal(nested, limits), "t.pickle: in the value STOP returns at byte 301: containers nested deeper than 100");
  EXPECT_EQ(read("\x80\x02"s + std::string(100, ']') + std::string(99, 'a') + ".", limits).size(), 1u);
  // A list that appends itself: EMPTY_LIST BINPUT 0 BINGET 0 APPEND
  EXPECT_EQ(refusal("\x80\x02]q\x00h\x00" "a."s),
            "t.pickle: in the value STOP returns at byte 8: a container that contains itself");
  // One 1000-byte string referenced 100 times: 100 kB out of 1 kB in.
  limits.max_output_bytes = 50'000;
  std::string many = "\x80\x02X\xe8\x03\x00\x00"s + std::string(1000, 'x') + "q\x00("s;
  for (int k = 0; k < 100; ++k) many += "h\x00"s;
  many += "l.";
  EXPECT_NE(refusal(many, limits).find("the data expands past 50000 bytes"), std::string::npos);
  limits.max_output_bytes = 200'000;
  EXPECT_EQ(read(many, limits).size(), 100u);
}

// Lists that each hold the previous one twice: 2^40 values as a tree, 40
// containers as the graph read_pickle returns.
std::string doubling(int levels) {
  std::string bytes = "\x80\x04]\x94"s;  // EMPTY_LIST MEMOIZE (memo 0)
  for (int k = 1; k <= levels; ++k)
    bytes += "h"s + static_cast<char>(k - 1) + "h" + static_cast<char>(k - 1) + "\x86\x94";  // BINGET x2 TUPLE2 MEMOIZE
  return bytes + ".";
}

TEST(PickleReader, SharedValuesStayShared) {
  PlainDataLimits limits;
  limits.max_memory_bytes = 64 << 10;
  const PlainData d = read_pickle(doubling(40), "t.pickle", limits);
  EXPECT_EQ(d.containers(), 41u);
  EXPECT_LT(d.memory_bytes(), 16u << 10);
  ASSERT_EQ(d.root().kind, PlainData::Kind::tuple);
  EXPECT_EQ(d.items(d.root())[0].ref, d.items(d.root())[1].ref);  // one container, referenced twice
  // Expanding it into a tree is what the expansion limit is for.
  limits.max_output_bytes = 1 << 20;
  EXPECT_THROW(plain_data_json(d, "t.pickle", limits), std::invalid_argument);
}

TEST(PickleReader, RefusesMemoryPastTheLimitCountingItsOwnTables) {
  PlainDataLimits limits;
  limits.max_memory_bytes = 10'000;
  // 2000 MARKs: nothing but the reader's mark table grows.
  EXPECT_EQ(refusal("\x80\x02"s + std::string(2000, '(') + ".", limits).rfind("t.pickle: byte ", 0), 0u);
  EXPECT_NE(refusal("\x80\x02"s + std::string(2000, '(') + ".", limits).find("takes more than 10000 bytes of memory"),
            std::string::npos);
  // 1000 memo entries of one small int.
  std::string memo = "\x80\x04K\x01"s;
  for (int k = 0; k < 1000; ++k) memo += "\x94";
  EXPECT_NE(refusal(memo + ".", limits).find("takes more than 10000 bytes of memory"), std::string::npos);
  EXPECT_EQ(read(memo + ".", PlainDataLimits{}), 1);
}

TEST(PickleReader, RefusesProtocolsZeroAndOne) {
  // pickle.dumps({'a': 1}, 1): all binary opcodes, but no PROTO.
  EXPECT_EQ(refusal("}q\x00X\x01\x00\x00\x00aq\x01K\x01s."s),
            "t.pickle: byte 0: no PROTO opcode (0x80) first: a pickle of protocol 0 or 1, which Tidepool does not "
            "read (protocols 2 to 5; torch.cuda.memory._dump_snapshot writes one of those)");
  EXPECT_NE(refusal("(dp0\nS'a'\np1\nI1\ns."s).find("byte 0: no PROTO opcode"), std::string::npos);  // protocol 0
}

TEST(JsonData, ReadsWhatJsonDumpWritesAsTheSameGraph) {
  const std::string text = R"({"a": [1, -2, 18446744073709551615, 1.5, "x", null, true], "b": {"a": "x"}})";
  const PlainData d = read_json_data(text, "t.json");
  EXPECT_EQ(plain_data_json(d, "t.json"), json::parse(text));
  // Strings are held once: "a" and "x" are each one string.
  const PlainData::Value& b = *d.find(d.root(), "b");
  EXPECT_EQ(d.entries(b)[0].first.ref, d.entries(d.root())[0].first.ref);
  EXPECT_EQ(d.entries(b)[0].second.ref, d.items(*d.find(d.root(), "a"))[4].ref);
}

TEST(JsonData, RefusesBadTextDepthAndMemory) {
  auto refused = [](const std::string& text, const PlainDataLimits& limits = {}) {
    try {
      read_json_data(text, "t.json", limits);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(read without an error)");
  };
  EXPECT_EQ(refused("{not json").rfind("t.json: not valid JSON: ", 0), 0u);
  PlainDataLimits limits;
  limits.max_depth = 10;
  EXPECT_EQ(refused(std::string(11, '[') + std::string(11, ']'), limits), "t.json: containers nested deeper than 10");
  EXPECT_EQ(refused(std::string(10, '[') + std::string(10, ']'), limits), "(read without an error)");
  limits.max_memory_bytes = 10'000;
  std::string many = "[";
  for (int k = 0; k < 1000; ++k) many += "[],";
  EXPECT_EQ(refused(many + "[]]", limits), "t.json: the data takes more than 10000 bytes of memory");
}

}  // namespace
}  // namespace tidepool
