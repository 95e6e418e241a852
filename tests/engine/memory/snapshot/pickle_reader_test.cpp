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

json read(const std::string& bytes, const PickleLimits& limits = {}) { return read_pickle(bytes, "t.pickle", limits); }

// The message read() refuses `bytes` with.
std::string refusal(const std::string& bytes, const PickleLimits& limits = {}) {
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
  PickleLimits limits;
  limits.max_depth = 100;
  const std::string nested = "\x80\x02"s + std::string(150, ']') + std::string(149, 'a') + ".";
  EXPECT_NE(refusal(nested, limits).find("containers nested deeper than 100"), std::string::npos);
  EXPECT_EQ(read("\x80\x02"s + std::string(100, ']') + std::string(99, 'a') + ".", limits).size(), 1u);
  // A list that appends itself: EMPTY_LIST BINPUT 0 BINGET 0 APPEND
  EXPECT_NE(refusal("\x80\x02]q\x00h\x00" "a."s).find("a container that contains itself"), std::string::npos);
  // One 1000-byte string referenced 100 times: 100 kB out of 1 kB in.
  limits.max_output_bytes = 50'000;
  std::string many = "\x80\x02X\xe8\x03\x00\x00"s + std::string(1000, 'x') + "q\x00("s;
  for (int k = 0; k < 100; ++k) many += "h\x00"s;
  many += "l.";
  EXPECT_NE(refusal(many, limits).find("the data expands past 50000 bytes"), std::string::npos);
  limits.max_output_bytes = 200'000;
  EXPECT_EQ(read(many, limits).size(), 100u);
}

}  // namespace
}  // namespace tidepool
